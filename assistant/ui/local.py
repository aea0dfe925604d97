"""Sign-in without typing on the server's own machine: who is at the other end of a loopback connection.

The local admin token (`Settings.local_token_file`, mode 600) is offered to a browser only when its request
comes straight over loopback (no proxy headers) and, where Linux tells us (`/proc/net/tcp*` lists each
socket's owner), from a process of the same OS user that runs the server. Other users of a shared GPU
machine, who cannot read the token file, cannot borrow it through the UI either.

`LocalOwnerMiddleware` decides this while the request's connection is surely open and records the answer
in the request's state, where the UI's event handlers read it (`is_local_owner`).
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

STATE_KEY = "nightshift_local_owner"
PROC_TCP = (Path("/proc/net/tcp"), Path("/proc/net/tcp6"))
FORWARDING_HEADERS = (b"forwarded", b"x-forwarded-for", b"x-real-ip")
Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]]
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def _normalize(address: IPAddress) -> IPAddress:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _decode(field: str) -> tuple[IPAddress, int]:
    """`0100007F:1F90` (as /proc/net/tcp writes 127.0.0.1:8080) -> (address, port)."""
    hex_address, hex_port = field.split(":")
    raw = bytes.fromhex(hex_address)
    if len(raw) == 4:
        address: IPAddress = ipaddress.IPv4Address(raw[::-1])
    else:
        address = ipaddress.IPv6Address(b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4)))
    return _normalize(address), int(hex_port, 16)


def peer_uid(
    client: tuple[str, int], server: tuple[str, int], tables: tuple[Path, ...] = PROC_TCP
) -> int | None:
    """The uid owning the client end of the TCP connection client -> server, or None if not found."""
    want_local = (_normalize(ipaddress.ip_address(client[0])), int(client[1]))
    want_remote = (_normalize(ipaddress.ip_address(server[0])), int(server[1]))
    for table in tables:
        try:
            lines = table.read_text(encoding="ascii").splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 8:
                continue
            try:
                if _decode(fields[1]) == want_local and _decode(fields[2]) == want_remote:
                    return int(fields[7])
            except ValueError:
                continue
    return None


def proc_tables_available(tables: tuple[Path, ...] = PROC_TCP) -> bool:
    """True where the kernel lists sockets with their owners (Linux)."""
    return any(table.is_file() for table in tables)


def decide_local_owner(scope: Scope, tables: tuple[Path, ...] = PROC_TCP) -> bool:
    """True when the request comes over loopback, unproxied, from a process of this server's OS user."""
    client, server = scope.get("client"), scope.get("server")
    if not client or not server or client[1] is None or server[1] is None:
        return False
    try:
        if not _normalize(ipaddress.ip_address(client[0])).is_loopback:
            return False
    except ValueError:
        return False
    headers = {name.lower() for name, _ in scope.get("headers", [])}
    if any(name in headers for name in FORWARDING_HEADERS):
        return False
    if not proc_tables_available(tables):
        return True  # no socket owners to check (not Linux): loopback alone decides
    return peer_uid((client[0], client[1]), (server[0], server[1]), tables) == os.geteuid()


class LocalOwnerMiddleware:
    """Marks POST requests under `path_prefix` (the UI's events) with `decide_local_owner`'s answer."""

    def __init__(self, app: ASGIApp, path_prefix: str = "/ui") -> None:
        self.app = app
        self.path_prefix = path_prefix.rstrip("/") + "/"

    async def __call__(
        self, scope: Scope, receive: Callable[[], Awaitable[Any]], send: Callable[[Any], Awaitable[None]]
    ) -> None:
        """Record the decision in `scope["state"]` and pass the request on."""
        if (
            scope.get("type") == "http"
            and scope.get("method") == "POST"
            and str(scope.get("path", "")).startswith(self.path_prefix)
        ):
            scope.setdefault("state", {})[STATE_KEY] = decide_local_owner(scope)
        await self.app(scope, receive, send)


def is_local_owner(request: Any) -> bool:
    """The middleware's answer for a Gradio request (False when there is none)."""
    inner = getattr(request, "request", None)
    scope = getattr(inner, "scope", None)
    if not isinstance(scope, dict):
        return False
    state = scope.get("state") or {}
    return bool(state.get(STATE_KEY, False))
