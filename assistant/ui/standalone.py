"""The chat UI served on its own (`nightshift assistant`): the UI at `/ui` and a health check, on a port of
its own, calling the HTTP API at `settings.api_url` (`NIGHTSHIFT_API_URL`) with each person's token.

It holds no Redis, database or scheduler: whatever a person does goes through the API, which checks their
token as for any client. On the machine that runs the API, as the same OS user, a browser on this machine
is signed in with the local admin token as it is at the API's own `/ui`.
"""

from __future__ import annotations

from typing import Any

import httpx
from fastapi import FastAPI
from fastapi.responses import JSONResponse

from assistant.ui.mount import mount_ui
from scheduler.settings import Settings

API_CHECK_TIMEOUT_S = 3.0


def api_health(api_url: str) -> str:
    """`"ok"` when the API at `api_url` answers its health check, else what went wrong, in words."""
    try:
        response = httpx.get(f"{api_url.rstrip('/')}/healthz", timeout=API_CHECK_TIMEOUT_S)
    except httpx.HTTPError as exc:
        return f"unreachable at {api_url}: {exc.__class__.__name__}"
    if response.status_code != 200:
        return f"unhealthy at {api_url}: HTTP {response.status_code}"
    return "ok"


def assistant_app(settings: Settings) -> FastAPI:
    """The UI alone, talking to the API at `settings.api_url`; `/healthz` says whether that API answers
    (200 either way: the UI itself is up, and says so when the API is not)."""
    app = FastAPI(title="nightshift assistant", docs_url=None, redoc_url=None, openapi_url=None)
    mount_ui(app, settings, api_url=settings.api_url)

    @app.get("/healthz", include_in_schema=False)
    def healthz() -> JSONResponse:
        """The UI is up; `api` says whether the API it calls answers."""
        body: dict[str, Any] = {"status": "ok", "api": api_health(settings.api_url)}
        return JSONResponse(body)

    return app
