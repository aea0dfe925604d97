"""Whatever a client sends, the API answers it without a 5xx, and a refused submission or change writes
nothing.

`tests/security/test_schemathesis.py` fuzzes every operation from its OpenAPI schema; these send what no
schema describes (NaN and infinities, wrong types, extreme numbers, odd times and strings, in any field),
with hypothesis, and check the rows after each answer.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.service import Cluster
from tests.api.conftest import TestClient

FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

ODD_TEXT = st.one_of(
    st.text(max_size=40),
    st.sampled_from([
        "", " ", "0", "-1", "1e309", "-1e309", "NaN", "inf", "9" * 40, "1.5", "true", "null", "\x00",
        "0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00", "9999-12-31T23:59:59", "2026-02-30",
        "2026-12-06T25:00:00", "tomorrow", "23:00", "+2h", "1970-01-01", "2026-12-06T08:00:00Z",
        "../../etc/passwd", "'; DROP TABLE tasks; --", "*", "train*", "%", "_", "🚀", "a" * 300,
    ]),
)  # fmt: skip

JSON_VALUE = st.recursive(
    st.one_of(
        st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(allow_nan=True, allow_infinity=True), ODD_TEXT,
    ),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(ODD_TEXT, inner, max_size=4)),
    max_leaves=8,
)  # fmt: skip

SPEC_FIELDS = [
    "command", "name", "workdir", "gpus", "gpu_memory_gb", "gpu_fraction", "priority", "not_before",
    "offpeak", "deadline", "time_limit_minutes", "estimated_minutes", "retries", "conda_env",
    "docker_image", "env", "depends_on", "depends_on_any", "tags", "resume_arg", "checkpoint_glob",
    "stop_signal", "grace_seconds", "node", "gpu_model", "sweep", "max_running", "metrics_file", "no_such",
]  # fmt: skip

PLAUSIBLE = {
    "gpus": st.integers(min_value=-2, max_value=70),
    "gpu_memory_gb": st.floats(min_value=-1, max_value=100),
    "gpu_fraction": st.floats(min_value=-0.5, max_value=1.5),
    "priority": st.sampled_from(["low", "normal", "high", "urgent", "asap"]),
    "not_before": ODD_TEXT,
    "deadline": ODD_TEXT,
    "depends_on": st.lists(st.integers(min_value=-5, max_value=2**64), max_size=3),
    "sweep": st.dictionaries(st.sampled_from(["lr", "bs", ""]), st.lists(JSON_VALUE, max_size=3), max_size=2),
}


@pytest.fixture
def cluster(make_cluster: Callable[..., Cluster]) -> Iterator[Cluster]:
    """The test cluster without the per-token rate limit, which hundreds of quick requests would meet."""
    yield make_cluster(rate_limit_per_s=0)


def field_value(field: str) -> st.SearchStrategy[Any]:
    """A value for one spec field: sometimes near what it expects, sometimes anything JSON can hold."""
    near = PLAUSIBLE.get(field)
    return JSON_VALUE if near is None else st.one_of(near, JSON_VALUE)


SPEC_CHANGES = st.lists(st.sampled_from(SPEC_FIELDS), max_size=4, unique=True).flatmap(
    lambda fields: st.fixed_dictionaries({field: field_value(field) for field in fields})
)


def body_of(changes: dict[str, Any]) -> bytes:
    """A spec that starts valid with `changes` laid over it, as bytes (NaN and Infinity included)."""
    return json.dumps({"command": "echo fuzz", **changes}).encode()


def task_count(client: TestClient, headers: dict[str, str]) -> int:
    """How many tasks the caller's team has."""
    answer = client.get("/api/v1/tasks", params={"limit": 1}, headers=headers)
    assert answer.status_code == 200, answer.text
    total: int = answer.json()["total"]
    return total


def assert_answered(answer: Any) -> None:
    """No 5xx; a refusal says what is wrong in `detail`."""
    assert answer.status_code < 500, (answer.request.url, answer.text)
    if answer.status_code >= 400:
        assert answer.json().get("detail"), answer.text


@pytest.mark.usefixtures("four_gpu_node")
def test_a_fuzzed_submission_is_created_whole_or_refused_with_a_message(client, alice):
    @FUZZ
    @given(changes=SPEC_CHANGES)
    def submit(changes: dict[str, Any]) -> None:
        before = task_count(client, alice)
        path = "/api/v1/sweeps" if "sweep" in changes else "/api/v1/tasks"
        answer = client.post(
            path, content=body_of(changes), headers={**alice, "content-type": "application/json"}
        )
        assert_answered(answer)
        created = answer.json().get("tasks", [answer.json()]) if answer.status_code == 201 else []
        assert task_count(client, alice) == before + len(created), (changes, answer.text)

    submit()


@pytest.mark.usefixtures("four_gpu_node")
def test_a_fuzzed_change_of_a_queued_task_is_applied_or_refused_and_the_task_stays_whole(client, alice):
    held = client.post("/api/v1/tasks", json={"command": "echo held", "gpus": 1}, headers=alice)
    assert held.status_code == 201, held.text
    task_id = held.json()["id"]
    assert client.post(f"/api/v1/tasks/{task_id}/hold", headers=alice).status_code == 200

    @FUZZ
    @given(changes=SPEC_CHANGES)
    def change(changes: dict[str, Any]) -> None:
        before = client.get(f"/api/v1/tasks/{task_id}", headers=alice).json()
        answer = client.patch(
            f"/api/v1/tasks/{task_id}", content=json.dumps(changes).encode(),
            headers={**alice, "content-type": "application/json"},
        )  # fmt: skip
        assert_answered(answer)
        after = client.get(f"/api/v1/tasks/{task_id}", headers=alice).json()
        assert after["command"] == "echo held" and after["status"] == "queued", after
        if answer.status_code >= 400:
            assert after == before, (changes, answer.text)

    change()


QUERIES = {
    "/api/v1/tasks": ["status", "team", "limit", "offset", "user", "since", "until", "name", "tag", "node"],
    "/api/v1/estimate": [
        "task_id", "gpus", "gpu_memory_gb", "gpu_fraction", "estimated_minutes", "priority", "offpeak",
        "not_before", "time_limit_minutes", "name", "depends_on", "depends_on_any", "deadline",
    ],
    "/api/v1/sweeps": ["limit", "offset", "user", "team", "status"],
    "/api/v1/reports/utilization": ["days", "by", "team"],
    "/api/v1/reports/summary": ["hours"],
    "/api/v1/quota": ["team"],
    "/api/v1/queue": ["limit"],
    "/api/v1/gpus": [],
    "/api/v1/tasks/1/logs": ["tail"],
    "/api/v1/tasks/1/explain": [],
    "/api/v1/sweeps/1/results": ["sort", "goal"],
    "/api/v1/results": ["tag", "sort", "goal"],
}  # fmt: skip

QUERY = st.sampled_from(sorted(QUERIES)).flatmap(
    lambda path: st.tuples(
        st.just(path),
        st.dictionaries(st.sampled_from(QUERIES[path] or ["x"]), ODD_TEXT, max_size=4),
    )
)


@pytest.mark.usefixtures("four_gpu_node")
def test_a_fuzzed_question_is_answered_or_refused_with_a_message(client, alice):
    queued = client.post("/api/v1/tasks", json={"command": "echo queued", "tags": ["x"]}, headers=alice)
    assert queued.status_code == 201, queued.text

    @FUZZ
    @given(query=QUERY)
    def ask(query: tuple[str, dict[str, str]]) -> None:
        path, params = query
        assert_answered(client.get(path, params=params, headers=alice))

    ask()
