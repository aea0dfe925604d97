"""Process wiring for `nightshift up | api | scheduler | worker | assistant`: Redis, the cluster, threads,
uvicorn."""

from __future__ import annotations

import getpass
import logging
import os
import re
import signal
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import redis
import uvicorn
from fastapi import FastAPI
from uvicorn.supervisors import Multiprocess

from api.main import create_app
from scheduler.dispatcher import Dispatcher
from scheduler.errors import PortInUse
from scheduler.gpus import open_gpu_monitor
from scheduler.node_owner import NodeTaken
from scheduler.notify.jobs import ClusterJobs
from scheduler.notify.notifier import Notifier
from scheduler.private_files import write_private_text
from scheduler.redis_server import EmbeddedRedis
from scheduler.service import Cluster
from scheduler.settings import Settings
from scheduler.store.identity import create_token
from scheduler.telemetry.agent import WorkerTelemetry
from scheduler.worker import Worker

log = logging.getLogger("nightshift")


def _redis_url_file(settings: Settings) -> Path:
    return settings.home / "redis.url"


def _answers(url: str) -> bool:
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=1)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except (redis.RedisError, ValueError):
        return False


@contextmanager
def redis_for(settings: Settings, may_start: bool) -> Iterator[str]:
    """The Redis URL to use: configured, the one a local `nightshift up` runs, or an embedded one we start."""
    if settings.redis_url:
        yield settings.redis_url
        return
    url_file = _redis_url_file(settings)
    if url_file.is_file():
        known = url_file.read_text(encoding="utf-8").strip()
        if _answers(known):
            yield known
            return
    if not may_start:
        raise SystemExit("no Redis: set NIGHTSHIFT_REDIS_URL, or start `nightshift up` on this machine first")
    server = EmbeddedRedis(settings.home / "redis", stop_with_parent=True).start()
    server.keep_running()
    write_private_text(url_file, server.url)  # it carries the password
    log.info("started embedded redis-server on 127.0.0.1:%d (AOF in %s)", server.port, server.data_dir)
    try:
        yield server.url
    finally:
        url_file.unlink(missing_ok=True)
        server.stop()


def stop_on_hangup() -> None:
    """A hangup (the terminal of `make up &` closed) stops this process as SIGTERM does: jobs get their
    stop signal and go back to the queue, instead of dying with it. Left alone where SIGHUP is ignored
    (`nohup`)."""
    if signal.getsignal(signal.SIGHUP) is signal.SIG_IGN:
        return
    signal.signal(signal.SIGHUP, lambda *_: os.kill(os.getpid(), signal.SIGTERM))


def check_port_free(
    host: str, port: int, command: str = "nightshift up", port_setting: str = "NIGHTSHIFT_PORT"
) -> None:
    """Raise `PortInUse` when `host:port` cannot be bound, before anything else starts (`command` and
    `port_setting` name what to stop or change)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds it
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise PortInUse(
                f"cannot listen on {host}:{port} ({exc.strerror}): is `{command}` already running? "
                f"Stop it, or choose another port with --port or {port_setting}",
                host=host,
                port=port,
            ) from exc


def ensure_local_admin_token(cluster: Cluster) -> Path:
    """On first start, write a local admin token (mode 600) that the CLI on this machine uses by itself."""
    path = cluster.settings.local_token_file
    if path.is_file():
        return path
    user = re.sub(r"[^a-z0-9_.\-]", "", (getpass.getuser() or "admin").lower()) or "admin"
    token = create_token(cluster.factory, user=user, team="local", is_admin=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(token + "\n")
    log.info("wrote the local admin token to %s", path)
    return path


@contextmanager
def open_cluster(settings: Settings, may_start_redis: bool) -> Iterator[Cluster]:
    """A connected cluster (database migrated, Redis reachable), closed on exit."""
    settings.home.mkdir(parents=True, exist_ok=True)
    with redis_for(settings, may_start_redis) as url:
        cluster = Cluster.open(settings, url)
        try:
            yield cluster
        finally:
            cluster.close()


def seal_stored_secrets(cluster: Cluster) -> None:
    """Seal secrets stored in the clear or under a rotated-out key; warn of any this box cannot open."""
    resealed, unreadable = cluster.secrets.reseal()
    if resealed:
        log.info("sealed %d stored secret%s under the current key", resealed, "" if resealed == 1 else "s")
    if unreadable:
        log.warning(
            "%d stored secret%s sealed with a key this box lacks: jobs naming them will fail until "
            "NIGHTSHIFT_SECRETS_KEY holds that key",
            unreadable,
            "" if unreadable == 1 else "s",
        )


def _thread(name: str, target: object, stop: threading.Event) -> threading.Thread:
    thread = threading.Thread(target=target, args=(stop,), name=name, daemon=True)  # type: ignore[arg-type]
    thread.start()
    return thread


def serve(settings: Settings, *, api: bool, scheduler: bool, worker: bool, host: str, port: int) -> None:
    """Run the chosen parts in this process until SIGINT/SIGTERM; stop them cleanly.

    Refuses to start, before starting anything, when the API's port is taken or another worker serves
    this node (`NodeTaken`): a second `nightshift up` must not touch the first one's jobs.
    """
    if api:
        check_port_free(host, port)
    stop_on_hangup()
    with open_cluster(settings, may_start_redis=api or scheduler) as cluster:
        node_worker, monitor = None, None
        if worker:
            monitor = open_gpu_monitor(settings.simulate_gpus, settings.node_name)
            node_worker = Worker(cluster, settings.node_name, monitor)
            try:
                node_worker.claim_node()
            except NodeTaken:
                monitor.close()
                raise
        if api:
            ensure_local_admin_token(cluster)
            seal_stored_secrets(cluster)
        cluster.rebuild_redis()
        stop = threading.Event()
        threads: list[threading.Thread] = []
        notifier = Notifier.from_settings(settings)
        background: list[ClusterJobs | WorkerTelemetry] = []
        if scheduler:
            threads.append(_thread("scheduler", Dispatcher(cluster).run, stop))
            background.append(ClusterJobs(cluster, notifier).start())
        if node_worker is not None:
            background.append(WorkerTelemetry(node_worker, notifier=notifier).start())
            threads.append(_thread("worker", node_worker.run, stop))
        try:
            if api and settings.api_workers > 1:
                _serve_api_processes(settings, cluster, host, port)
            elif api:
                config = uvicorn.Config(
                    create_app(cluster), host=host, port=port, log_level="info", timeout_graceful_shutdown=5
                )
                signal.signal(signal.SIGTERM, lambda *_: stop.set())  # uvicorn re-raises it after shutdown
                uvicorn.Server(config).run()
            else:
                _wait_for_signal(stop)
        finally:
            stop.set()
            began = time.monotonic()
            log.info("stopping: %s", ", ".join(thread.name for thread in threads) or "the API")
            for thread in threads:
                thread.join(timeout=settings.kill_grace_s + 10)
                if thread.is_alive():
                    log.warning("the %s did not stop within %.0f s", thread.name, settings.kill_grace_s + 10)
            for jobs in background:
                jobs.stop()
            notifier.close()
            if monitor is not None:
                monitor.close()
            log.info("stopped in %.1f s", time.monotonic() - began)


def serve_assistant(settings: Settings, *, host: str, port: int) -> None:
    """Serve the chat UI alone (`nightshift assistant`) until SIGINT/SIGTERM, calling the API at
    `settings.api_url`; refuses to start when the port is taken, and warns when that API does not answer
    yet (it may start later: each sign-in calls it afresh)."""
    from api.cli.zone import in_cluster_zone
    from assistant.ui.standalone import api_health, assistant_app

    check_port_free(host, port, "nightshift assistant", "NIGHTSHIFT_ASSISTANT_PORT")
    stop_on_hangup()
    health = api_health(settings.api_url)
    if health != "ok":
        log.warning("the API is %s: people cannot sign in until it answers (set NIGHTSHIFT_API_URL)", health)
    else:
        log.info("the chat UI calls the API at %s", settings.api_url)
    settings = in_cluster_zone(settings)  # the chat reads "tonight" where the GPUs are, as at /ui
    config = uvicorn.Config(
        assistant_app(settings), host=host, port=port, log_level="info", timeout_graceful_shutdown=5
    )
    uvicorn.Server(config).run()


_CHILD_SETTINGS = "NIGHTSHIFT_API_PROCESS_SETTINGS"
_CHILD_REDIS = "NIGHTSHIFT_API_PROCESS_REDIS_URL"


def _serve_api_processes(settings: Settings, cluster: Cluster, host: str, port: int) -> None:
    """`api_workers` uvicorn processes on one listening socket, supervised from here until SIGINT/SIGTERM.

    Each builds its own cluster (`api_process_app`) from this process's settings and Redis, which reach it
    through its environment; the rate limit is then kept in Redis so the processes share it.
    """
    os.environ[_CHILD_SETTINGS] = settings.model_dump_json()
    os.environ[_CHILD_REDIS] = cluster.queue.url or ""
    config = uvicorn.Config(
        "api.server:api_process_app",
        factory=True,
        host=host,
        port=port,
        workers=settings.api_workers,
        log_level="info",
        timeout_graceful_shutdown=5,
    )
    log.info("serving the API with %d processes", settings.api_workers)
    Multiprocess(config, sockets=[config.bind_socket()]).run()


def api_process_app() -> FastAPI:
    """The app of one of several API processes (`api_workers` > 1): the parent's settings and Redis."""
    settings = Settings.model_validate_json(os.environ[_CHILD_SETTINGS])
    return create_app(Cluster.open(settings, os.environ[_CHILD_REDIS]))


def _wait_for_signal(stop: threading.Event) -> None:
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    while not stop.wait(3600):
        pass
