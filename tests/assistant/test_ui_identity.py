"""Who the UI signs in: GET /api/v1/me, the local admin token for the machine's own user only, the mount
itself, and prompt files that travel with an installed package."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import sysconfig
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from assistant.ui.local import PROC_TCP, decide_local_owner, peer_uid
from assistant.ui.session import api_base_url, local_admin_token
from scheduler.settings import Settings

REPO = Path(__file__).resolve().parents[2]


def test_me_names_the_tokens_user_team_and_admin_flag(api: Any, make_identity: Callable[..., Any]) -> None:
    _, alice = make_identity("alice", "vision")
    _, root = make_identity("root", "ops", admin=True)
    assert api.get("/api/v1/me", headers={"Authorization": f"Bearer {alice}"}).json() == {
        "user": "alice",
        "team": "vision",
        "admin": False,
    }
    assert api.get("/api/v1/me", headers={"Authorization": f"Bearer {root}"}).json()["admin"] is True
    assert api.get("/api/v1/me").status_code == 401
    assert api.get("/api/v1/me", headers={"Authorization": "Bearer nope"}).status_code == 401


def test_the_front_page_leads_to_the_ui_which_is_served_on_the_api_port(api: Any) -> None:
    answer = api.get("/", follow_redirects=False)
    assert answer.status_code in (302, 307) and answer.headers["location"] == "/ui/"
    assert api.get("/ui/").status_code == 200
    config = api.get("/ui/config").json()
    assert config["title"] == "nightshift"
    ids = {component.get("props", {}).get("elem_id") for component in config["components"]}
    assert {"chat", "confirm-button", "drop-button", "tasks-table", "queue-table", "gpus-table"} <= ids
    assert {
        "chart-energy",
        "chart-cost",
        "chart-offpeak",
        "chart-quota",
        "results-table",
        "results-chart",
    } <= ids
    assert api.get("/healthz").status_code == 200  # the API is unchanged beside it


# --- the local admin token ------------------------------------------------------------------------


@pytest.fixture
def loopback_connection() -> Iterator[tuple[tuple[str, int], tuple[str, int]]]:
    """A real TCP connection over loopback: (client address, server address)."""
    listener = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(listener.getsockname())
    accepted, _ = listener.accept()
    yield client.getsockname(), listener.getsockname()
    for sock in (accepted, client, listener):
        sock.close()


@pytest.mark.skipif(not PROC_TCP[0].is_file(), reason="needs Linux /proc/net/tcp")
def test_the_owner_of_a_loopback_connection_is_read_from_the_kernels_socket_table(
    loopback_connection: tuple[tuple[str, int], tuple[str, int]],
) -> None:
    client, server = loopback_connection
    assert peer_uid(client, server) == os.geteuid()
    assert peer_uid(server, client) == os.geteuid()  # the accepting end, looked up the other way
    assert peer_uid(client, (server[0], server[1] + 1 if server[1] < 65535 else 1)) is None


def test_a_connection_of_another_os_user_is_not_the_local_owner(tmp_path: Path) -> None:
    # Given a socket table (the format of /proc/net/tcp) where 127.0.0.1:40000 -> :8000 belongs to uid 4242
    table = tmp_path / "tcp"
    table.write_text(
        "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
        "   0: 0100007F:9C40 0100007F:1F40 01 00000000:00000000 00:00000000 00000000  4242        0 1 1\n"
    )
    scope = {"client": ("127.0.0.1", 40000), "server": ("127.0.0.1", 8000), "headers": []}
    assert peer_uid(("127.0.0.1", 40000), ("127.0.0.1", 8000), (table,)) == 4242
    assert decide_local_owner(scope, (table,)) is (os.geteuid() == 4242)


def test_remote_or_proxied_requests_never_get_the_local_token(tmp_path: Path) -> None:
    nothing = (tmp_path / "missing",)  # no socket table: loopback alone would decide
    local = {"client": ("127.0.0.1", 40000), "server": ("127.0.0.1", 8000), "headers": []}
    assert decide_local_owner(local, nothing) is True
    assert decide_local_owner({**local, "client": ("10.1.2.3", 40000)}, nothing) is False
    proxied = {**local, "headers": [(b"x-forwarded-for", b"203.0.113.9")]}
    assert decide_local_owner(proxied, nothing) is False
    assert decide_local_owner({**local, "client": None}, nothing) is False


class FakeStarletteRequest:
    """Just the ASGI scope a Gradio request carries (what the middleware wrote into it)."""

    def __init__(self, scope: dict[str, Any]) -> None:
        self.scope = scope


class GradioRequest:
    def __init__(self, scope: dict[str, Any]) -> None:
        self.request = FakeStarletteRequest(scope)


def test_the_local_token_is_offered_only_to_the_local_owner(make_settings: Callable[..., Settings]) -> None:
    settings = make_settings()
    settings.home.mkdir(parents=True)
    settings.local_token_file.write_text("ns_local_secret\n")
    owner = GradioRequest({"state": {"nightshift_local_owner": True}, "server": ("127.0.0.1", 8123)})
    stranger = GradioRequest({"state": {"nightshift_local_owner": False}, "server": ("127.0.0.1", 8123)})
    assert local_admin_token(owner, settings) == "ns_local_secret"
    assert local_admin_token(stranger, settings) is None
    assert local_admin_token(GradioRequest({}), settings) is None
    assert api_base_url(owner, settings) == "http://127.0.0.1:8123"  # calls go back to this very server
    assert api_base_url(GradioRequest({}), settings) == settings.api_url


# --- prompts in an installed package ------------------------------------------------------------------


def test_the_prompt_files_are_found_in_a_built_package_without_the_checkout(tmp_path: Path) -> None:
    # Given the packages as setuptools builds them for a wheel (from a copy of the sources)
    source, build = tmp_path / "src", tmp_path / "build"
    for name in ("scheduler", "api", "assistant", "prompts"):
        shutil.copytree(REPO / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    subprocess.run(
        [sys.executable, "-c", "import setuptools; setuptools.setup()", "build_py", "--build-lib", str(build)],
        cwd=source, check=True, capture_output=True,
    )  # fmt: skip
    assert sorted(p.name for p in (build / "prompts").iterdir()) == ["examples.md", "system.md", "tools.md"]

    # When Python imports them from there (no site hooks, so the editable install cannot interfere)
    code = (
        "import assistant.prompt_files as p, assistant.agent as a; "
        "print(p.__file__); print(a.PROMPTS_DIR); print(len(a.load_prompt(a.PROMPTS_DIR)))"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(build), sysconfig.get_paths()["purelib"]])}
    env.pop("NIGHTSHIFT_PROMPTS_DIR", None)
    out = subprocess.run(
        [sys.executable, "-S", "-c", code], cwd=tmp_path, env=env, check=True, capture_output=True, text=True
    ).stdout.split("\n")

    # Then the prompts load from the built package
    assert out[0] == str(build / "assistant" / "prompt_files.py")
    assert out[1] == str(build / "prompts")
    assert int(out[2]) > 500


def test_a_page_load_with_no_local_token_changes_nothing_so_a_sign_in_typed_meanwhile_stands(
    make_settings: Callable[..., Settings],
) -> None:
    """The load event may run after a sign-in typed at once (CI: the page then read "Not signed in.")."""
    import gradio as gr

    from assistant.ui.handlers import Handlers

    settings = make_settings()
    settings.home.mkdir(parents=True)
    stranger = GradioRequest({"state": {"nightshift_local_owner": False}, "server": ("127.0.0.1", 8123)})

    updates = Handlers(settings).auto_sign_in(None, stranger)  # type: ignore[arg-type]

    assert updates and all(update == gr.skip() for update in updates)
