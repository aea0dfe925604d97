"""Every error nightshift raises on purpose, with messages a person can act on.

    NightshiftError
    ├── SpecError             (400/422: a task spec that cannot be accepted)
    ├── NotFoundError         (404: a task, token or node that does not exist *for this caller*)
    ├── AuthError             (401: no token, unknown token, revoked token)
    ├── PermissionDenied      (403: the caller may not do this)
    ├── ConflictError         (409: the task is not in a state that allows this)
    ├── RateLimited           (429: too many requests or too many queued tasks)
    ├── StaleLeaseError       (a worker's fencing token no longer matches: it must stop its job)
    ├── ExecutorError         (a job could not be started: missing conda/docker, bad workdir, ...)
    ├── GpuInventoryError     (NVML or the simulated inventory could not be read)
    └── ServiceUnavailable    (503: Redis or the database cannot be reached)
        └── NodeDidNotAnswer  (503: the node holding a task's log did not answer for it)

The API maps each class to one HTTP status in a single exception handler (`api/errors.py`).
"""

from __future__ import annotations

from typing import Any


class NightshiftError(Exception):
    """Base class: the message is meant for the person who caused it."""

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details


class SpecError(NightshiftError):
    """Raised when a task spec is invalid; `errors` lists each field with what to fix."""

    def __init__(self, message: str, errors: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.errors = errors or [{"field": None, "message": message}]


class NotFoundError(NightshiftError):
    """Raised when a task (or another object) does not exist or belongs to another team."""


class AuthError(NightshiftError):
    """Raised when a request carries no token, an unknown token or a revoked one."""


class PermissionDenied(NightshiftError):
    """Raised when the caller is known but may not perform this action."""


class ConflictError(NightshiftError):
    """Raised when a task is not in a state that allows the action (e.g. cancel a finished task)."""


class RateLimited(NightshiftError):
    """Raised when a token sends too many requests or a team has too many tasks queued."""


class StaleLeaseError(NightshiftError):
    """Raised when a worker's fencing token no longer matches the task's: its claim was lost."""


class ExecutorError(NightshiftError):
    """Raised when a job cannot be started (missing conda or docker, missing workdir, ...)."""


class GpuInventoryError(NightshiftError):
    """Raised when the GPU inventory (NVML or simulated) cannot be read or parsed."""


class ServiceUnavailable(NightshiftError):
    """Raised when Redis or the database cannot be reached."""


class NodeDidNotAnswer(ServiceUnavailable):
    """Raised when the node that ran a task does not answer for its log (its worker is down or busy)."""

    def __init__(self, task_id: int, node: str, why: str) -> None:
        super().__init__(
            f"the log of task {task_id} is on node {node}, whose worker {why} "
            "(is it running? `nightshift nodes`); it can be read there once it is back"
        )


class PortInUse(NightshiftError):
    """Raised when the API cannot listen on its address (another `nightshift up`, or another program)."""
