"""A small HTTP client of the nightshift API, used by the CLI (and by the assistant's tools)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from scheduler.settings import Settings


class ClientError(Exception):
    """Raised when the API answers with an error; `message` is the API's own explanation."""

    def __init__(self, status_code: int, message: str, errors: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.message = message
        self.errors = errors or []


LIVE_STATUSES = ("queued", "running")  # a task that can still be cancelled


def find_token(settings: Settings) -> str | None:
    """The token to use: `NIGHTSHIFT_TOKEN`, else the local admin token that `nightshift up` wrote."""
    if settings.token:
        return settings.token
    path: Path = settings.local_token_file
    try:
        return path.read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


class NightshiftClient:
    """Calls /api/v1 with a bearer token."""

    def __init__(
        self,
        base_url: str,
        token: str | None,
        *,
        transport: httpx.BaseTransport | None = None,
        timeout_s: float = 30.0,
    ) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.http = httpx.Client(
            base_url=base_url.rstrip("/"), headers=headers, timeout=timeout_s, transport=transport
        )

    @classmethod
    def from_settings(cls, settings: Settings) -> NightshiftClient:
        """A client for the configured API URL and token."""
        return cls(settings.api_url, find_token(settings))

    def close(self) -> None:
        """Close the connection pool."""
        self.http.close()

    def _response(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            response = self.http.request(method, f"/api/v1{path}", **kwargs)
        except httpx.TransportError as exc:
            raise ClientError(
                0,
                f"cannot reach the nightshift API at {self.http.base_url}: {exc}. "
                "Is it running (`nightshift up`)? On another machine or port, set NIGHTSHIFT_API_URL "
                "(or NIGHTSHIFT_PORT, the port `nightshift up` binds here)",
            ) from None
        if response.status_code >= 400:
            raise _error_of(response)
        return response

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self._response(method, path, **kwargs)
        if response.headers.get("content-type", "").startswith("application/json"):
            return response.json()
        return response.text

    def submit(self, spec: dict[str, Any], idempotency_key: str | None = None) -> dict[str, Any]:
        """POST /tasks."""
        return self.submit_once(spec, idempotency_key)[0]

    def submit_once(
        self, spec: dict[str, Any], idempotency_key: str | None = None
    ) -> tuple[dict[str, Any], bool]:
        """POST /tasks; returns (task, created): created is False when the idempotency key was already used
        for this same task (the API answers 200 with it instead of 201)."""
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
        response = self._response("POST", "/tasks", json=spec, headers=headers)
        task: dict[str, Any] = response.json()
        return task, response.status_code != 200

    def submit_sweep(self, spec: dict[str, Any], idempotency_key: str | None = None) -> dict[str, Any]:
        """POST /sweeps: a spec with a `sweep`, one task per parameter set."""
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
        result: dict[str, Any] = self._call("POST", "/sweeps", json=spec, headers=headers)
        return result

    def submit_batch(
        self, specs: list[dict[str, Any]], idempotency_key: str | None = None, name: str | None = None
    ) -> dict[str, Any]:
        """POST /tasks/batch: every spec becomes a task, or none does."""
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
        body: dict[str, Any] = {"specs": specs, **({"name": name} if name else {})}
        result: dict[str, Any] = self._call("POST", "/tasks/batch", json=body, headers=headers)
        return result

    def list_sweeps(
        self,
        limit: int = 50,
        user: str | None = None,
        team: str | None = None,
        status: str | None = None,
        offset: int = 0,
    ) -> dict[str, Any]:
        """GET /sweeps: a page of the sweeps the caller may see, newest first (`user`: that person's only;
        `team`: an admin's choice; `status`: queued, running, done or cancelled): `{"sweeps": [...],
        "count": the page's length, "total": how many match}`."""
        filters = {"user": user, "team": team, "status": status}
        params: dict[str, Any] = {k: v for k, v in filters.items() if v is not None}
        result: dict[str, Any] = self._call(
            "GET", "/sweeps", params={**params, "limit": limit, "offset": offset}
        )
        return result

    def cancel_sweep(self, sweep_id: int) -> dict[str, Any]:
        """POST /sweeps/{id}/cancel."""
        result: dict[str, Any] = self._call("POST", f"/sweeps/{int(sweep_id)}/cancel")
        return result

    def change_sweep(self, sweep_id: int, changes: dict[str, Any], dry_run: bool = False) -> dict[str, Any]:
        """PATCH /sweeps/{id}: the same change to every queued task of the sweep (with `dry_run`, checked
        as it would be, nothing changed)."""
        params = {"dry_run": "true"} if dry_run else {}
        result: dict[str, Any] = self._call("PATCH", f"/sweeps/{int(sweep_id)}", json=changes, params=params)
        return result

    def hold_sweep(self, sweep_id: int) -> dict[str, Any]:
        """POST /sweeps/{id}/hold: every queued task of the sweep held back."""
        result: dict[str, Any] = self._call("POST", f"/sweeps/{int(sweep_id)}/hold")
        return result

    def rerun_sweep(
        self, sweep_id: int, statuses: Sequence[str] = ("failed",), task_ids: Sequence[int] | None = None
    ) -> dict[str, Any]:
        """POST /sweeps/{id}/rerun: the sweep's tasks that ended so (or those of `task_ids`), each run again
        in its place."""
        body: dict[str, Any] = {"status": list(statuses)}
        if task_ids is not None:
            body["task_ids"] = list(task_ids)
        result: dict[str, Any] = self._call("POST", f"/sweeps/{int(sweep_id)}/rerun", json=body)
        return result

    def release_sweep(self, sweep_id: int) -> dict[str, Any]:
        """POST /sweeps/{id}/release: every held task of the sweep let go."""
        result: dict[str, Any] = self._call("POST", f"/sweeps/{int(sweep_id)}/release")
        return result

    def results(
        self,
        sweep_id: int | None = None,
        tag: str | None = None,
        sort: str | None = None,
        goal: str | None = None,
    ) -> dict[str, Any]:
        """GET /sweeps/{id}/results, or GET /results?tag= for the tasks carrying a tag."""
        params = {k: v for k, v in {"sort": sort, "goal": goal, "tag": tag}.items() if v is not None}
        path = f"/sweeps/{int(sweep_id)}/results" if sweep_id is not None else "/results"
        result: dict[str, Any] = self._call("GET", path, params=params)
        return result

    def list_tasks(
        self, status: str | None = None, team: str | None = None, limit: int = 200, user: str | None = None
    ) -> list[dict[str, Any]]:
        """GET /tasks: the tasks of the first page."""
        filters = {"status": status, "team": team, "user": user}
        tasks: list[dict[str, Any]] = self.task_page(filters, limit)["tasks"]
        return tasks

    def task_page(
        self, filters: Mapping[str, str | None], limit: int = 200, offset: int = 0
    ) -> dict[str, Any]:
        """GET /tasks with any of its filters (`status`, `team`, `user`, `since`, `until` as ISO 8601,
        `name`, `tag`, `node`, `held`, `sweep_id`; None: not given): `{"tasks": [...], "count": the page's
        length, "total": how many match}`."""
        params: dict[str, Any] = {k: v for k, v in filters.items() if v is not None}
        page: dict[str, Any] = self._call(
            "GET", "/tasks", params={**params, "limit": limit, "offset": offset}
        )
        return page

    def get_task(self, task_id: int) -> dict[str, Any]:
        """GET /tasks/{id}."""
        result: dict[str, Any] = self._call("GET", f"/tasks/{task_id}")
        return result

    def cancel(self, task_id: int) -> dict[str, Any]:
        """POST /tasks/{id}/cancel."""
        result: dict[str, Any] = self._call("POST", f"/tasks/{task_id}/cancel")
        return result

    def own_live_task_ids(
        self, status: str | None = None, name: str | None = None, tag: str | None = None
    ) -> list[int]:
        """The ids of the caller's queued and running tasks (or those of `status`) matching `name` (exact, or
        `train*`) and `tag`, oldest first (`nightshift cancel --mine`, the chat's "cancel all my jobs")."""
        me = self.me()["user"]
        found: list[int] = []
        for wanted in [status] if status else LIVE_STATUSES:
            offset = 0
            while True:
                page = self.task_page({"user": me, "status": wanted, "name": name, "tag": tag}, 1000, offset)
                found += [int(task["id"]) for task in page["tasks"]]
                offset += int(page["count"])
                if not page["count"] or offset >= int(page["total"]):
                    break
        return sorted(set(found))

    def requeue(self, task_id: int, hold: bool = False) -> dict[str, Any]:
        """POST /tasks/{id}/requeue: a running task stopped and put back in the queue with its age (`hold`:
        held there until released)."""
        params = {"hold": "true"} if hold else {}
        result: dict[str, Any] = self._call("POST", f"/tasks/{int(task_id)}/requeue", params=params)
        return result

    def change(self, task_id: int, changes: dict[str, Any], dry_run: bool = False) -> dict[str, Any]:
        """PATCH /tasks/{id}: a queued task's priority, start window, limits, retries, name or tags (with
        `dry_run`, checked and answered as it would be, nothing changed)."""
        params = {"dry_run": "true"} if dry_run else {}
        result: dict[str, Any] = self._call("PATCH", f"/tasks/{int(task_id)}", json=changes, params=params)
        return result

    def hold(self, task_id: int) -> dict[str, Any]:
        """Keep a queued task from starting until it is released."""
        result: dict[str, Any] = self._call("POST", f"/tasks/{int(task_id)}/hold")
        return result

    def release(self, task_id: int) -> dict[str, Any]:
        """Let a held task start again."""
        result: dict[str, Any] = self._call("POST", f"/tasks/{int(task_id)}/release")
        return result

    def logs(self, task_id: int, tail: int | None = None) -> str:
        """GET /tasks/{id}/logs."""
        params = {"tail": tail} if tail is not None else {}
        return str(self._call("GET", f"/tasks/{task_id}/logs", params=params))

    def follow_logs(self, task_id: int, tail: int | None = None) -> Iterator[str]:
        """Stream a task's log until the task ends."""
        params: dict[str, Any] = {"follow": "true"}
        if tail is not None:
            params["tail"] = tail
        try:
            with self.http.stream(
                "GET", f"/api/v1/tasks/{task_id}/logs", params=params, timeout=None
            ) as response:
                if response.status_code >= 400:
                    response.read()
                    raise _error_of(response)
                yield from response.iter_text()
        except httpx.TransportError as exc:
            raise ClientError(0, f"log stream interrupted: {exc}") from None

    def queue(self, limit: int = 200) -> dict[str, Any]:
        """GET /queue."""
        result: dict[str, Any] = self._call("GET", "/queue", params={"limit": limit})
        return result

    def me(self) -> dict[str, Any]:
        """GET /me: who the token belongs to (`user`, `team`, `admin`)."""
        result: dict[str, Any] = self._call("GET", "/me")
        return result

    def gpus(self) -> dict[str, Any]:
        """GET /gpus."""
        result: dict[str, Any] = self._call("GET", "/gpus")
        return result

    def cluster_clock(self) -> tuple[str | None, str | None]:
        """The cluster's zone and off-peak windows ("23:00-07:00") as `GET /healthz` says them; None for
        what it does not say (an older API, or none answering)."""
        try:
            body = self.http.get("/healthz").json()
        except (httpx.HTTPError, ValueError):
            return None, None
        if not isinstance(body, dict):
            return None, None
        zone, windows = body.get("timezone"), body.get("offpeak")
        return (
            zone if isinstance(zone, str) and zone else None,
            windows if isinstance(windows, str) else None,
        )

    def check(self, spec: dict[str, Any], estimate: bool = True) -> dict[str, Any]:
        """POST /tasks/check: the spec checked as a submission would be, nothing created (with when it would
        start, unless `estimate` is False)."""
        params = {} if estimate else {"estimate": "false"}
        result: dict[str, Any] = self._call("POST", "/tasks/check", json=spec, params=params)
        return result

    def put_secret(self, name: str, value: str) -> dict[str, Any]:
        """PUT /secrets/{name}: set one of the caller's secrets."""
        result: dict[str, Any] = self._call("PUT", f"/secrets/{quote(name, safe='')}", json={"value": value})
        return result

    def delete_secret(self, name: str) -> None:
        """DELETE /secrets/{name}."""
        self._call("DELETE", f"/secrets/{quote(name, safe='')}")

    def post(self, path: str, params: dict[str, str] | None = None) -> Any:
        """POST to any /api/v1 path without a body (actions such as drain), with these query parameters."""
        return self._call("POST", path, params=params or {})

    def get(self, path: str, **params: Any) -> Any:
        """GET any /api/v1 path (for endpoints without a dedicated method)."""
        return self._call("GET", path, params={k: v for k, v in params.items() if v is not None})


def _error_of(response: httpx.Response) -> ClientError:
    try:
        body = response.json()
        message = str(body.get("detail") or response.reason_phrase)
        errors = body.get("errors")
    except ValueError:
        message, errors = response.text or response.reason_phrase, None
    return ClientError(response.status_code, message, errors)
