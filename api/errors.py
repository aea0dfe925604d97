"""One place that turns nightshift's errors into HTTP answers: a status code and a message to act on."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from scheduler.errors import (
    AuthError,
    ConflictError,
    NightshiftError,
    NotFoundError,
    PermissionDenied,
    RateLimited,
    ServiceUnavailable,
    SpecError,
)
from scheduler.spec import friendly_message

log = logging.getLogger(__name__)

STATUS_OF: dict[type[NightshiftError], int] = {
    SpecError: 422,
    NotFoundError: 404,
    AuthError: 401,
    PermissionDenied: 403,
    ConflictError: 409,
    RateLimited: 429,
    ServiceUnavailable: 503,
}


def _status(exc: NightshiftError) -> int:
    for kind in type(exc).__mro__:
        if kind in STATUS_OF:
            return STATUS_OF[kind]  # type: ignore[index]
    return 400


_NOT_AN_OBJECT = "the request body must be a JSON object with the task's fields"


def _request_error_items(exc: RequestValidationError) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for error in exc.errors():
        loc = [str(part) for part in error.get("loc", ()) if part not in ("body", "query", "path", "header")]
        field = ".".join(loc) or None
        kind = error.get("type", "")
        if kind == "json_invalid":
            field = None  # the loc holds the character offset, not a field of the spec
            message = (
                f"the request body is not valid JSON ({error.get('ctx', {}).get('error', 'parse error')})"
            )
        elif kind in ("model_attributes_type", "dict_type") and field is None:
            message = _NOT_AN_OBJECT
        elif kind == "dict_type":
            message = f'{field} must be a mapping of names to values (e.g. {{"KEY": "value"}})'
        else:
            message = friendly_message(field, error)
        items.append({"field": field, "message": message})
    return items


def install_error_handlers(app: FastAPI) -> None:
    """Map NightshiftError subclasses and request validation errors to JSON answers."""

    @app.exception_handler(NightshiftError)
    async def _nightshift_error(request: Request, exc: NightshiftError) -> JSONResponse:
        body: dict[str, Any] = {"detail": exc.message}
        if isinstance(exc, SpecError):
            body["errors"] = exc.errors
        headers = {"WWW-Authenticate": "Bearer"} if isinstance(exc, AuthError) else None
        if isinstance(exc, RateLimited):
            headers = {"Retry-After": str(exc.details.get("retry_after_s", 1))}
        return JSONResponse(body, status_code=_status(exc), headers=headers)

    async def _queue_unreachable(request: Request, exc: Exception) -> JSONResponse:
        log.warning("%s %s: Redis unreachable: %s", request.method, request.url.path, exc)
        return JSONResponse(
            {
                "detail": "the queue (Redis) cannot be reached right now: try again in a few seconds "
                "(`nightshift up` starts its own Redis again by itself; with NIGHTSHIFT_REDIS_URL set, check "
                "that server)"
            },
            status_code=503,
            headers={"Retry-After": "5"},
        )

    app.add_exception_handler(RedisConnectionError, _queue_unreachable)
    app.add_exception_handler(RedisTimeoutError, _queue_unreachable)

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        items = _request_error_items(exc)
        content_type = request.headers.get("content-type", "")
        if "json" not in content_type:  # curl -d '{...}' sends a form: the body was never read as JSON
            sent_as = content_type or "no content type"
            for item in items:
                if item["message"] == _NOT_AN_OBJECT:
                    item["message"] = (
                        f"the request body was sent as {sent_as}, not JSON: send the header Content-Type: "
                        "application/json (curl: -H 'Content-Type: application/json')"
                    )
        return JSONResponse(
            {"detail": "; ".join(item["message"] for item in items), "errors": items}, status_code=422
        )
