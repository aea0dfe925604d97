"""The assistant's view of the HTTP API: `NightshiftClient` plus the newer read endpoints.

Endpoints a server may not have yet (explain, estimate, quota, utilization, summary, a sweep) raise
`Unavailable`, so the tools can say so (or fall back) instead of failing the whole turn.
"""

from __future__ import annotations

from typing import Any

import httpx

from api.client import ClientError, NightshiftClient


class Unavailable(ClientError):
    """Raised when the server has no such endpoint (an older API): FastAPI's plain 404 "Not Found"."""


class AssistantClient(NightshiftClient):
    """The chatting person's client: every call carries their token, so the API decides what they may do."""

    def _read(self, path: str, **params: Any) -> dict[str, Any]:
        try:
            result: dict[str, Any] = self.get(path, **params)
        except ClientError as exc:
            if exc.status_code in (404, 405) and exc.message in ("Not Found", "Method Not Allowed"):
                raise Unavailable(
                    exc.status_code, f"this server has no {path.split('?')[0]} endpoint yet"
                ) from None
            raise
        return result

    def explain(self, task_id: int) -> dict[str, Any]:
        """GET /tasks/{id}/explain."""
        return self._read(f"/tasks/{int(task_id)}/explain")

    def estimate(
        self,
        task_id: int | None = None,
        gpus: int | None = None,
        gpu_memory_gb: float | None = None,
        estimated_minutes: float | None = None,
        offpeak: bool = False,
        not_before: str | None = None,
        time_limit_minutes: float | None = None,
        name: str | None = None,
        depends_on: list[int] | None = None,
        deadline: str | None = None,
        depends_on_any: list[int] | None = None,
        gpu_fraction: float | None = None,
        gpu_model: str | None = None,
        node: str | None = None,
    ) -> dict[str, Any]:
        """GET /estimate for a task, or for a hypothetical one of that size (and start window); with a
        `name`, its run time is learned from your past runs of that name and size; with a `deadline`,
        `deadline_warning` says when it would not make it behind the queue."""
        if task_id is not None:
            return self._read("/estimate", task_id=task_id)
        return self._read(
            "/estimate",
            gpus=gpus,
            gpu_memory_gb=gpu_memory_gb,
            gpu_fraction=gpu_fraction if gpu_fraction is not None and gpu_fraction < 1 else None,
            estimated_minutes=estimated_minutes,
            offpeak="true" if offpeak else None,
            not_before=not_before,
            time_limit_minutes=time_limit_minutes,
            name=name,
            depends_on=depends_on or None,
            depends_on_any=depends_on_any or None,
            deadline=deadline,
            gpu_model=gpu_model,
            node=node,
        )

    def quota(self, team: str | None = None) -> dict[str, Any]:
        """GET /quota (your team's unless an admin names another)."""
        return self._read("/quota", team=team)

    def utilization(self, days: int = 7, by: str | None = None) -> dict[str, Any]:
        """GET /reports/utilization."""
        return self._read("/reports/utilization", days=days, by=by)

    def night_summary(self, hours: float | None = None) -> dict[str, Any]:
        """GET /reports/summary: the tasks that ended last night (or in the last `hours`)."""
        return self._read("/reports/summary", hours=hours)

    def sweep(self, sweep_id: int) -> dict[str, Any]:
        """GET /sweeps/{id}: a sweep with its tasks and how many are in each status."""
        return self._read(f"/sweeps/{int(sweep_id)}")

    def sweeps(self, limit: int = 20, user: str | None = None) -> list[dict[str, Any]]:
        """GET /sweeps: the newest sweeps the person may see (`user`: that person's), newest first."""
        found: list[dict[str, Any]] = self._read("/sweeps", limit=limit, user=user)["sweeps"]
        return found


def client_for(
    base_url: str, token: str | None, transport: httpx.BaseTransport | None = None
) -> AssistantClient:
    """A client for one person (their token), optionally over an in-process transport."""
    return AssistantClient(base_url, token, transport=transport)
