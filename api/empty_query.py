"""Query parameters left empty (`GET /tasks?status=&team=`, what a form with blank fields sends) mean "no
filter", as they do in most web APIs, instead of a 422 for a value that is not one of the choices."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode

from starlette.types import ASGIApp, Receive, Scope, Send


class DropEmptyQueryValues:
    """ASGI middleware: a GET request's query parameters with an empty value are removed before routing."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        query = scope.get("query_string", b"") if scope["type"] == "http" else b""
        if query and scope["method"] == "GET":
            pairs = parse_qsl(query.decode("latin-1"), keep_blank_values=True)
            if any(value == "" for _, value in pairs):
                kept = urlencode([(key, value) for key, value in pairs if value != ""])
                scope = {**scope, "query_string": kept.encode("latin-1")}
        await self.app(scope, receive, send)
