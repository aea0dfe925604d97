"""Every endpoint × every kind of caller: own team, other team, admin, no token, revoked token.

The endpoints are read from the app's OpenAPI document at test time, so an endpoint added later is
covered without touching this file. Rules checked for each:

- no token or a revoked token: 401 (except the public `PUBLIC_PATHS`);
- own team and admin: never 401, never a 5xx, and the own team's task is found;
- other team: a task-scoped call (a `task_id` in the path or the query) answers exactly like a call for a
  task that does not exist; no answer of any endpoint contains the own team's task (its secret command);
- admin-only endpoints answer 403 to non-admins.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

PUBLIC_PATHS = {"/healthz", "/metrics", "/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc"}
SECRET = "isolation-secret-7f3a"
MISSING_OFFSET = 100_000
CALLER_KINDS = ["own", "other", "admin", "none", "revoked"]


def _operations(app_client) -> list[tuple[str, str, dict[str, Any]]]:
    document = app_client.app.openapi()
    found = []
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method in {"get", "post", "put", "patch", "delete"}:
                found.append((method.upper(), path, operation))
    # cancel changes the task: run it last
    return sorted(found, key=lambda op: ("cancel" in op[1], op[1], op[0]))


def _sample(schema: dict[str, Any]) -> Any:
    for option in schema.get("anyOf", []):
        if option.get("type") != "null":
            return _sample(option)
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind in ("integer", "number"):
        return max(1, schema.get("minimum", 1))
    if kind == "boolean":
        return False
    return "x"


def _request(operation: dict[str, Any], path: str, task_id: int) -> tuple[str, dict[str, Any], bool]:
    """(path with parameters filled, query, whether the call names a task)."""
    query: dict[str, Any] = {}
    names_task = False
    for param in operation.get("parameters", []):
        name, where = param["name"], param["in"]
        if name == "task_id":
            names_task = True
            value: Any = task_id
        elif name == "name":
            value = "node-a"
        elif where == "query" and not param.get("required"):
            continue
        else:
            value = _sample(param.get("schema", {}))
        if where == "path":
            path = path.replace("{" + name + "}", str(value))
        elif where == "query":
            query[name] = value
    return path, query, names_task


def _call(app_client, method: str, path: str, query: dict[str, Any], headers: dict[str, str]):
    body = (
        {"command": "echo submitted-in-isolation-test"}
        if method == "POST" and path.endswith("/tasks")
        else None
    )
    return app_client.request(method, path, params=query, json=body, headers=headers)


@pytest.mark.parametrize("kind", CALLER_KINDS)
def test_every_endpoint_answers_each_kind_of_caller_as_it_should(app_client, cluster, callers, kind):
    # Given a task of the own team (vision) with a secret in its command, and a worker node registered
    task, _ = cluster.submit(callers.own_identity, {"command": f"echo {SECRET}", "name": "isolated"})
    headers = callers.of(kind)
    checked = 0
    for method, template, operation in _operations(app_client):
        path, query, names_task = _request(operation, template, task.id)
        # When this caller calls it
        response = _call(app_client, method, path, query, headers)
        where = f"{method} {template} as {kind}: {response.status_code} {response.text[:200]}"
        checked += 1
        assert response.status_code < 500, where
        if template in PUBLIC_PATHS:
            assert SECRET not in response.text, where
            continue
        if kind in ("none", "revoked"):
            assert response.status_code == 401, where
            continue
        assert response.status_code != 401, where
        if kind == "other":
            assert SECRET not in response.text, where
            if names_task:
                missing_path, missing_query, _ = _request(operation, template, task.id + MISSING_OFFSET)
                missing = _call(app_client, method, missing_path, missing_query, headers)
                assert response.status_code == missing.status_code, where
                assert re.sub(r"\d+", "N", response.text) == re.sub(r"\d+", "N", missing.text), where
        if response.status_code == 403:
            admin = _call(app_client, method, path, query, callers.of("admin"))
            assert kind != "admin" and admin.status_code != 403, where
        if kind in ("own", "admin") and names_task:
            assert response.status_code != 404, where
    # Then every endpoint was exercised, and the task is untouched by anyone but its team and the admin
    assert checked >= 10
    status = cluster.tasks.get_any(task.id).status
    assert status == ("cancelled" if kind in ("own", "admin") else "queued")


def test_the_task_list_of_another_team_never_shows_the_task_even_when_asked_by_team_name(
    app_client, cluster, callers
):
    cluster.submit(callers.own_identity, {"command": f"echo {SECRET}"})

    for params in ({}, {"status": "queued"}):
        response = app_client.get("/api/v1/tasks", params=params, headers=callers.of("other"))
        assert response.status_code == 200
        assert response.json()["count"] == 0
        assert SECRET not in response.text
    # asking for another team by name is refused, the same for a team that exists and one that does not
    for team in ("vision", "no-such-team"):
        response = app_client.get("/api/v1/tasks", params={"team": team}, headers=callers.of("other"))
        assert response.status_code == 403
        assert "only your own team's tasks" in response.json()["detail"]
        assert SECRET not in response.text
    admin_view = app_client.get("/api/v1/tasks", params={"team": "vision"}, headers=callers.of("admin"))
    assert SECRET in admin_view.text
