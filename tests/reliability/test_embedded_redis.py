"""The embedded redis-server of `nightshift up` stops with it, even when it is killed outright: a crash leaves
no server behind for the next start to adopt (it might be shutting down) or for anyone to find later."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil

from scheduler.errors import ServiceUnavailable
from scheduler.redis_server import find_redis_server
from tests.conftest import unavailable, wait_until

REPO = Path(__file__).resolve().parents[2]
STARTER = textwrap.dedent(
    """
    import signal, sys, time
    from pathlib import Path
    from scheduler.redis_server import EmbeddedRedis
    server = EmbeddedRedis(Path(sys.argv[1]), stop_with_parent=sys.argv[2] == "yes").start()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # as `nightshift up` turns Ctrl-C into an orderly stop
    print(server.process.pid, flush=True)
    time.sleep(600)
    """
)


def _start(tmp_path, stop_with_parent: bool) -> tuple[subprocess.Popen[str], int]:
    parent = subprocess.Popen(
        [sys.executable, "-c", STARTER, str(tmp_path), "yes" if stop_with_parent else "no"],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own group, as a shell's job
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert parent.stdout is not None
    return parent, int(parent.stdout.readline())


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_the_embedded_redis_stops_when_nightshift_up_is_killed(tmp_path):
    try:
        find_redis_server()
    except ServiceUnavailable as exc:  # the shared rule: fail in CI, skip only where Redis is missing
        unavailable(f"redis-server not available: {exc.message}")
    stopping, stopping_redis = _start(tmp_path / "a", stop_with_parent=True)
    lingering, lingering_redis = _start(tmp_path / "b", stop_with_parent=False)
    try:
        for parent in (stopping, lingering):
            parent.send_signal(signal.SIGKILL)
            parent.wait(timeout=10)

        wait_until(lambda: not _running(stopping_redis), timeout_s=15)
        assert (tmp_path / "a" / "appendonlydir").is_dir()  # it shut down as on SIGTERM, AOF kept
        assert _running(lingering_redis)  # without it, the server outlives its parent (the control)
    finally:
        for pid in (stopping_redis, lingering_redis):
            if _running(pid):
                os.kill(pid, signal.SIGKILL)
        for parent in (stopping, lingering):
            if parent.poll() is None:
                parent.kill()


def test_a_ctrl_c_to_nightshift_ups_process_group_does_not_stop_its_redis(tmp_path):
    """Ctrl-C reaches every process of the terminal's foreground group; Redis must live on until nightshift
    has put its jobs back and stops it, or the shutdown fails on a refused connection."""
    try:
        find_redis_server()
    except ServiceUnavailable as exc:
        unavailable(f"redis-server not available: {exc.message}")
    parent, redis_pid = _start(tmp_path, stop_with_parent=True)
    try:
        os.killpg(parent.pid, signal.SIGINT)
        time.sleep(1.0)  # Redis stops within milliseconds of a SIGINT it receives

        assert _running(redis_pid)
        assert parent.poll() is None
    finally:
        parent.kill()
        parent.wait(timeout=10)
        wait_until(lambda: not _running(redis_pid), timeout_s=15)  # and it still stops with its parent
