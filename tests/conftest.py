"""Shared fixtures: a real redis-server per test session (flushed before each test), SQLite or PostgreSQL.

Real services only. Locally, a missing redis-server or PostgreSQL skips the tests that need it; in CI
(`CI` set) it fails them, so a green CI run means they ran.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

import psutil
import pytest
import redis
import uvicorn
from hypothesis import settings as hypothesis_settings

from api.cli.zone import forget_reported_zones
from api.main import create_app
from scheduler.errors import ServiceUnavailable
from scheduler.executor.cgroups import JobCgroups
from scheduler.executor.parent_death import pdeathsig_prefix
from scheduler.redis_server import EmbeddedRedis
from scheduler.service import Cluster
from scheduler.settings import Settings
from scheduler.store.identity import Identity, authenticate, create_token

IN_CI = bool(os.environ.get("CI"))
POSTGRES_ADMIN_URL = os.environ.get(
    "NIGHTSHIFT_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
# The suite runs as root in CI containers: jobs of unmapped users may run as root here (tests/security
# checks the refusal with allow_root_jobs=False explicitly). Subprocesses (`nightshift up`) inherit it.
os.environ.setdefault("NIGHTSHIFT_ALLOW_ROOT_JOBS", "true")

# Property tests: in CI the same examples on the same code (a red run is the change's, not a new draw's, and
# reruns the same); locally a new draw each run, which is how new edge cases are found (then kept as
# `@example`s).
hypothesis_settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
hypothesis_settings.register_profile("explore", print_blob=True)
hypothesis_settings.load_profile("ci" if IN_CI else "explore")


def stops_with_test_run() -> list[str]:
    """An argv prefix that has a service process started by a test get SIGTERM when the test run dies,
    even by SIGKILL (`setpriv --pdeathsig`; none where setpriv is missing): a cancelled run leaves no
    `nightshift` behind. Only for processes started from the main thread."""
    return pdeathsig_prefix(signal.SIGTERM)


def unavailable(message: str) -> NoReturn:
    """A real service or tool this test needs is missing: fail in CI (where make test installs it), else skip."""
    if IN_CI:
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(autouse=True)
def fresh_cluster_zone() -> Iterator[None]:
    """Forget the zone an API reported: a CLI process asks once, but the tests run many CLIs in one
    process, against APIs that may reuse a port another test's API, in another zone, had."""
    forget_reported_zones()
    yield
    forget_reported_zones()


@pytest.fixture(autouse=True)
def no_active_python_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run as from a shell with no virtualenv or conda env active, wherever the suite itself was started:
    `nightshift submit` gives a job the active one's PATH (`api/cli/python_env.py`)."""
    for name in ("VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedRedis]:
    """Our own redis-server on a free port, in a temp dir (never a server we did not start)."""
    try:
        # stops with the test run even when it is killed (a cancelled CI job leaves no server behind)
        server = EmbeddedRedis(
            tmp_path_factory.mktemp("redis"), appendonly=False, stop_with_parent=True
        ).start()
    except ServiceUnavailable as exc:
        unavailable(f"redis-server not available: {exc.message}")
        raise
    yield server
    server.stop()


@pytest.fixture
def redis_url(redis_server: EmbeddedRedis) -> str:
    """The URL of the test Redis, flushed before each test (it is ours: we started it)."""
    client = redis.Redis.from_url(redis_server.url)
    client.flushall()
    client.close()
    return redis_server.url


@pytest.fixture(scope="session")
def postgres_database() -> Iterator[str]:
    """A fresh PostgreSQL database for this test session, dropped at the end."""
    from sqlalchemy import create_engine, text

    name = f"nightshift_test_{secrets.token_hex(4)}"
    admin = create_engine(POSTGRES_ADMIN_URL, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as connection:
            connection.execute(text(f'CREATE DATABASE "{name}"'))
    except Exception as exc:
        admin.dispose()
        unavailable(f"PostgreSQL not available at {POSTGRES_ADMIN_URL}: {exc}")
        raise
    url = POSTGRES_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    yield url
    with admin.connect() as connection:
        connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


def _reset_postgres(url: str) -> None:
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    with engine.begin() as connection:
        connection.execute(text("DROP SCHEMA public CASCADE; CREATE SCHEMA public"))
    engine.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Each store test runs on SQLite (the default) and on PostgreSQL (several machines)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'nightshift.db'}"
    url: str = request.getfixturevalue("postgres_database")
    _reset_postgres(url)
    return url


@pytest.fixture
def make_settings(tmp_path: Path) -> Callable[..., Settings]:
    """Factory of settings rooted in this test's temp dir (fast leases and grace periods)."""

    def make(**overrides: Any) -> Settings:
        values: dict[str, Any] = {
            "home": tmp_path / "home",
            "simulate_gpus": "4x24",
            "node_name": "node-a",
            "timezone": "UTC",
            "lease_ttl_s": 5.0,
            "heartbeat_interval_s": 0.5,
            "kill_grace_s": 1.0,
            "scheduler_safety_pass_s": 0.5,
            "retry_backoff_s": 0.0,
        }
        values.update(overrides)
        return Settings(**values)

    return make


@contextmanager
def opened_cluster(settings: Settings, redis_url: str) -> Iterator[Cluster]:
    """A cluster on `settings`' database and the test Redis, its queue rebuilt from SQL; closed after."""
    settings.home.mkdir(parents=True, exist_ok=True)
    opened = Cluster.open(settings, redis_url)
    opened.rebuild_redis()
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def cluster(make_settings: Callable[..., Settings], redis_url: str, tmp_path: Path) -> Iterator[Cluster]:
    """A cluster on SQLite in the temp dir and the test Redis."""
    with opened_cluster(
        make_settings(database_url=f"sqlite:///{tmp_path / 'nightshift.db'}"), redis_url
    ) as opened:
        yield opened


@pytest.fixture
def make_cluster(
    make_settings: Callable[..., Settings], redis_url: str, tmp_path: Path
) -> Iterator[Callable[..., Cluster]]:
    """Factory: a cluster (SQLite in the temp dir, the test Redis) with these setting overrides; closed
    after the test."""
    opened: list[Cluster] = []

    def make(**overrides: Any) -> Cluster:
        settings = make_settings(database_url=f"sqlite:///{tmp_path / 'made.db'}", **overrides)
        settings.home.mkdir(parents=True, exist_ok=True)
        made = Cluster.open(settings, redis_url)
        made.rebuild_redis()
        opened.append(made)
        return made

    yield make
    for made in opened:
        made.close()


@contextmanager
def serve_api(cluster: Cluster) -> Iterator[str]:
    """The real API of `cluster` on a free local port, in a thread (for CLI tests); yields its URL."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(create_app(cluster), host="127.0.0.1", port=port, log_level="error")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_until(lambda: server.started)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture
def make_identity(cluster: Cluster) -> Callable[..., tuple[Identity, str]]:
    """Factory: `make_identity("alice", "vision")` -> (identity, token)."""

    def make(user: str = "alice", team: str = "vision", admin: bool = False) -> tuple[Identity, str]:
        token = create_token(cluster.factory, user=user, team=team, is_admin=admin)
        return authenticate(cluster.factory, token), token

    return make


@pytest.fixture
def job_cgroups() -> JobCgroups:
    """The job cgroups a worker started here would use (`JobCgroups.detect`); these tests need them."""
    found = JobCgroups.detect()
    if found is None:
        unavailable("this process may not create cgroup v2 cgroups (needs root or a delegated subtree)")
    return found


def is_alive(pid: int) -> bool:
    """True when pid is a live process (a zombie has already let go of its memory and GPUs)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def read_pids(path: Path, count: int, timeout_s: float = 20.0) -> list[int]:
    """Wait until a job has written `count` pids (one a line) into `path`, and return them."""

    def ready() -> list[int] | None:
        words = path.read_text().split() if path.exists() else []
        return [int(word) for word in words] if len(words) >= count else None

    pids: list[int] = wait_until(ready, timeout_s)
    return pids


def wait_until(predicate: Callable[[], Any], timeout_s: float = 20.0, interval_s: float = 0.05) -> Any:
    """Poll `predicate` until it returns something truthy; fail the test after `timeout_s`."""
    import time

    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout_s} s")
        time.sleep(interval_s)


@pytest.fixture
def run_in_thread() -> Iterator[Callable[[Callable[[threading.Event], None]], threading.Event]]:
    """Factory: run a `run(stop_event)` loop in a thread; every loop is stopped and joined after the test."""
    started: list[tuple[threading.Thread, threading.Event]] = []

    def start(target: Callable[[threading.Event], None]) -> threading.Event:
        stop = threading.Event()
        thread = threading.Thread(target=target, args=(stop,), daemon=True)
        thread.start()
        started.append((thread, stop))
        return stop

    yield start
    for thread, stop in started:
        stop.set()
        thread.join(timeout=30)
