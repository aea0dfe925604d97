"""Mounting the UI into the FastAPI app: built on its first request, so API-only use pays nothing for it.

Importing Gradio and building the page take seconds on a small machine; the API (and its tests) should not
wait for that. `LazyUi` stands at `/ui` and, on the first request, builds the Gradio app with
`gr.mount_gradio_app` (on a private holder app), enters Gradio's own lifespan (state expiry, file cleanup)
and starts its queue, as mounting it at start-up would have done; the parent app's shutdown closes both.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from fastapi import FastAPI
from fastapi.responses import RedirectResponse
from starlette.routing import Mount

from assistant.ui.local import ASGIApp, LocalOwnerMiddleware, Scope
from scheduler.settings import Settings

UI_PATH = "/ui"


class LazyUi:
    """An ASGI app that builds the Gradio UI on its first request and then hands every request to it."""

    def __init__(self, settings: Settings, path: str, api_url: str | None = None) -> None:
        self.settings = settings
        self.path = path
        self.api_url = api_url
        self._app: ASGIApp | None = None
        self._blocks: Any = None
        self._lock: asyncio.Lock | None = None
        self._stack = contextlib.AsyncExitStack()

    async def _build(self) -> ASGIApp:
        import anyio
        import gradio as gr

        from assistant.ui.app import CSS, build_ui

        blocks: Any = await anyio.to_thread.run_sync(build_ui, self.settings, self.api_url)
        holder = FastAPI()
        gr.mount_gradio_app(
            holder, blocks, path=self.path, ssr_mode=False, footer_links=["settings"], css=CSS
        )
        gradio_app: Any = next(r.app for r in holder.routes if isinstance(r, Mount) and r.path == self.path)
        await self._stack.enter_async_context(gradio_app.router.lifespan_context(gradio_app))
        blocks.run_startup_events()
        await blocks.run_extra_startup_events()
        self._blocks = blocks
        app: ASGIApp = gradio_app
        return app

    async def app(self) -> ASGIApp:
        """The Gradio app, built once (concurrent first requests wait for the same build)."""
        if self._app is None:
            if self._lock is None:
                self._lock = asyncio.Lock()
            async with self._lock:
                if self._app is None:
                    self._app = await self._build()
        return self._app

    async def __call__(
        self, scope: Scope, receive: Callable[[], Awaitable[Any]], send: Callable[[Any], Awaitable[None]]
    ) -> None:
        """Serve one request (HTTP or websocket) with the Gradio app."""
        await (await self.app())(scope, receive, send)

    async def aclose(self) -> None:
        """Stop Gradio's queue and background tasks (when it was ever built)."""
        if self._blocks is not None:
            self._blocks.close(verbose=False)
            self._blocks = None
        await self._stack.aclose()
        self._app = None


def mount_ui(app: FastAPI, settings: Settings, path: str = UI_PATH, api_url: str | None = None) -> LazyUi:
    """Serve the chat UI at `path` of `app` (built on first use) and redirect `/` there. `api_url`: where
    the API answers when `app` is not the API's own (`nightshift assistant`)."""
    ui = LazyUi(settings, path, api_url)
    app.add_middleware(LocalOwnerMiddleware, path_prefix=path)
    app.mount(path, ui)

    @app.get("/", include_in_schema=False)
    def root() -> RedirectResponse:
        """The UI is the front page."""
        return RedirectResponse(f"{path}/")

    parent_lifespan = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(parent: Any) -> AsyncIterator[Any]:
        async with parent_lifespan(parent) as state:
            try:
                yield state
            finally:
                await ui.aclose()

    app.router.lifespan_context = lifespan
    app.state.ui = ui
    return ui
