"""A cap on the size of a request body, checked before the app reads it whole: a 1 GB JSON body would
otherwise be held in memory by the API process every team shares."""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class _BodyTooLarge(Exception):
    """Raised inside `receive` once the body passes the cap."""


class BodySizeLimit:
    """ASGI middleware: a body over `max_mb` MiB (by its Content-Length, or counted as it arrives when
    chunked) is answered 413 with what to do instead, and never reaches a route."""

    def __init__(self, app: ASGIApp, max_mb: float) -> None:
        self.app = app
        self.max_mb = max_mb
        self.max_bytes = int(max_mb * 1024 * 1024)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(send)
            return
        received = 0
        too_large = refused = started = False

        async def counted_receive() -> Message:
            nonlocal received, too_large
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    too_large = not started  # a response already begun is the app's to end
                    raise _BodyTooLarge
            return message

        async def watched_send(message: Message) -> None:
            nonlocal refused, started
            if not too_large:
                started = started or message["type"] == "http.response.start"
                await send(message)
            elif not refused:  # the app answered its failed read (FastAPI: a 400): the 413 instead
                refused = True
                await self._refuse(send)

        try:
            await self.app(scope, counted_receive, watched_send)
        except _BodyTooLarge:
            if too_large and not refused:
                await self._refuse(send)

    async def _refuse(self, send: Send) -> None:
        detail = (
            f"the request body is over {self.max_mb:g} MiB: send fewer tasks per batch, or a smaller spec "
            "(NIGHTSHIFT_MAX_REQUEST_MB raises the cap)"
        )
        body = json.dumps({"detail": detail}).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": body})
