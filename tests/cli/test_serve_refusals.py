"""`nightshift up | worker` refuse to start, before starting anything, when they would clash with a running
one: the API's port is taken, or another worker serves this node."""

from __future__ import annotations

import signal
import socket

import pytest
import redis

from api.server import check_port_free, serve
from scheduler.errors import PortInUse
from scheduler.held_key import OwnerId, pid_namespace, process_started
from scheduler.keys import RedisKeys
from scheduler.node_owner import NodeTaken


def test_a_taken_port_is_refused_with_what_to_do() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]

        with pytest.raises(PortInUse, match=f"cannot listen on 127.0.0.1:{port} .*--port or NIGHTSHIFT_PORT"):
            check_port_free("127.0.0.1", port)

    check_port_free("127.0.0.1", port)  # free again


def test_a_worker_for_a_node_another_live_worker_serves_refuses_before_touching_anything(
    make_settings, redis_url, tmp_path
) -> None:
    settings = make_settings(redis_url=redis_url, database_url=f"sqlite:///{tmp_path / 'ns.db'}")
    client = redis.Redis.from_url(redis_url)
    holder = str(
        OwnerId(socket.gethostname(), 1, process_started(1) or 0, "0000beef", pid_namespace())
    )  # alive, here
    client.set(RedisKeys().node_owner("node-a"), holder)

    expected = f"node 'node-a' is already served by another worker \\(pid 1 on {socket.gethostname()};"
    hangup = signal.getsignal(signal.SIGHUP)  # serve() sets its own; this is the test runner's process
    try:
        with pytest.raises(NodeTaken, match=expected):
            serve(settings, api=False, scheduler=False, worker=True, host="127.0.0.1", port=0)
    finally:
        signal.signal(signal.SIGHUP, hangup)

    assert client.get(RedisKeys().node_owner("node-a")) == holder.encode()
    assert not client.exists(RedisKeys().node("node-a"))  # it published nothing
    client.close()


def test_the_chat_served_alone_refuses_a_taken_port_and_names_its_own_setting(monkeypatch, tmp_path) -> None:
    from typer.testing import CliRunner

    from api.cli.app import app
    from scheduler.settings import get_settings

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        monkeypatch.setenv("NIGHTSHIFT_HOME", str(tmp_path / "home"))
        monkeypatch.setenv("NIGHTSHIFT_ASSISTANT_PORT", str(port))
        get_settings.cache_clear()
        hangup = signal.getsignal(signal.SIGHUP)
        try:
            result = CliRunner().invoke(app, ["assistant", "--host", "127.0.0.1"])
        finally:
            signal.signal(signal.SIGHUP, hangup)
            get_settings.cache_clear()

    assert result.exit_code == 1, result.output
    assert f"cannot listen on 127.0.0.1:{port}" in result.output
    assert "is `nightshift assistant` already running?" in result.output
    assert "--port or NIGHTSHIFT_ASSISTANT_PORT" in result.output
