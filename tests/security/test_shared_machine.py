"""Jobs of every team run on the same machine as nightshift, each as its user's OS account (`run_as`).

What one member's job can reach there: a folder inside another account's private folder (the spec's
`workdir`), the service's data folder (the SQLite database with every team's specs, the task logs, other
jobs' output and checkpoint folders) and the embedded Redis (the queue, cancel flags, leases). Real jobs
as real accounts (`nobody`, `daemon`), a real worker, real redis-server and SQLite.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
import redis

from scheduler.clock import now_ms
from scheduler.executor.launch import ENTER_WORKDIR_EXIT_CODE
from scheduler.gpus import SimulatedGpus
from scheduler.redis_server import EmbeddedRedis
from scheduler.service import Cluster
from scheduler.store.db import create_db_engine
from scheduler.worker import Worker
from tests.conftest import wait_until

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="running jobs as other accounts needs root")
SECRET = "only-for-bob-5d1c"


@pytest.fixture
def open_folder() -> Iterator[Path]:
    """A folder every account can reach (pytest's own temp folders are the test runner's only)."""
    folder = Path(tempfile.mkdtemp(prefix="nightshift-shared-", dir="/var/tmp"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def shared_cluster(make_settings: Callable[..., Any], redis_url: str, open_folder: Path) -> Iterator[Cluster]:
    """A cluster whose data folder other accounts can reach, as `/var/lib/nightshift` would be; alice's
    jobs run as `nobody`, bob's as `daemon`."""
    home = open_folder / "home"
    settings = make_settings(
        home=home,
        database_url=f"sqlite:///{home / 'nightshift.db'}",
        allow_root_jobs=False,
        run_as={"alice": "nobody", "bob": "daemon"},
    )
    home.mkdir(mode=0o755)
    opened = Cluster.open(settings, redis_url)
    opened.rebuild_redis()
    yield opened
    opened.close()


def _worker(cluster: Cluster, run_in_thread: Callable[..., Any]) -> None:
    worker = Worker(cluster, "node-a", SimulatedGpus("4x24", node="node-a"), base_env=dict(os.environ))
    worker.publish_node()
    run_in_thread(worker.run)


def _run(cluster: Cluster, who: Any, spec: dict[str, Any]) -> Any:
    """Submit, assign to node-a as the scheduler would, and wait for the task to end."""
    task, _ = cluster.submit(who, {"gpus": 0, **spec})
    assert cluster.queue.assign(task.id, "node-a", [], now_ms())
    final = ("succeeded", "failed", "cancelled")
    assert wait_until(lambda: cluster.tasks.get_any(task.id).status in final, 30)
    return cluster.tasks.get_any(task.id)


@as_root
@pytest.mark.parametrize("through", ["path", "symlink"])
def test_a_workdir_inside_another_accounts_private_folder_is_not_entered(
    shared_cluster, make_identity_on, run_in_thread, open_folder, through
):
    # Given bob's private folder (700) with a readable folder inside it, and a symlink to that anyone can see
    private = open_folder / "bob-home"
    inner = private / "notes"
    inner.mkdir(parents=True)
    (inner / "plan.txt").write_text(SECRET)
    (inner / "plan.txt").chmod(0o644)
    inner.chmod(0o755)
    private.chmod(0o700)
    (open_folder / "link").symlink_to(inner)
    workdir = inner if through == "path" else open_folder / "link"
    alice = make_identity_on(shared_cluster, "alice", "vision")
    _worker(shared_cluster, run_in_thread)

    # When alice (run as nobody) names it as her job's workdir
    task = _run(shared_cluster, alice, {"command": "cat plan.txt; ls -la", "workdir": str(workdir)})

    # Then her job never runs there: nobody could not have entered it by itself
    log = shared_cluster.log_path(task.id).read_text()
    assert SECRET not in log and "plan.txt" not in log.split("==> $")[-1].split("\n", 1)[1]
    assert task.status == "failed" and task.exit_code == ENTER_WORKDIR_EXIT_CODE
    assert f"nobody cannot enter the workdir {workdir}" in log


@as_root
def test_a_workdir_the_account_may_enter_works_as_before(
    shared_cluster, make_identity_on, run_in_thread, open_folder
):
    (open_folder / "data.txt").write_text("hello from a shared folder\n")
    (open_folder / "data.txt").chmod(0o644)
    alice = make_identity_on(shared_cluster, "alice", "vision")
    _worker(shared_cluster, run_in_thread)

    task = _run(shared_cluster, alice, {"command": "cat data.txt; pwd", "workdir": str(open_folder)})

    log = shared_cluster.log_path(task.id).read_text()
    assert task.status == "succeeded", log
    assert "hello from a shared folder" in log and f"\n{open_folder}\n" in log


@as_root
def test_a_job_cannot_read_another_teams_specs_logs_results_or_checkpoints_in_the_data_folder(
    shared_cluster, make_identity_on, run_in_thread, open_folder
):
    # Given bob's finished task: a secret in its env, its output and its metrics.json
    bob = make_identity_on(shared_cluster, "bob", "nlp")
    alice = make_identity_on(shared_cluster, "alice", "vision")
    _worker(shared_cluster, run_in_thread)
    victim = _run(
        shared_cluster,
        bob,
        {
            "command": f'echo {SECRET}-log; echo \'{{"{SECRET}": 1}}\' > "$NIGHTSHIFT_OUTPUT_DIR/metrics.json"; '
            f'echo x > "$NIGHTSHIFT_CHECKPOINT_DIR/{SECRET}.pt"',
            "env": {"WANDB_API_KEY": f"{SECRET}-key"},
        },
    )
    assert victim.status == "succeeded", shared_cluster.log_path(victim.id).read_text()
    home = shared_cluster.settings.home
    targets = [
        home / "nightshift.db",
        home / "nightshift.db-wal",
        shared_cluster.log_path(victim.id),
        home / "outputs" / str(victim.id) / "metrics.json",
        home / "checkpoints" / str(victim.id),
    ]

    # When alice's job (as nobody) tries to read them
    probe = "; ".join(f"cat {target} 2>&1 | head -c 20000; ls {target} 2>&1" for target in targets)
    task = _run(shared_cluster, alice, {"command": probe, "workdir": str(open_folder)})

    # Then it read none of it
    log = shared_cluster.log_path(task.id).read_text()
    output = log.split(f"==> $ {probe}\n", 1)[1]
    assert SECRET not in output
    assert output.count("Permission denied") >= len(targets)
    for private in (home / "nightshift.db", home / "logs", home / "outputs" / str(victim.id)):
        assert stat.S_IMODE(private.stat().st_mode) & 0o077 == 0, private


def test_the_embedded_redis_asks_for_a_password_that_no_command_line_shows(tmp_path: Path) -> None:
    server = EmbeddedRedis(tmp_path / "redis", appendonly=False).start()
    try:
        anonymous = redis.Redis(port=server.port, socket_connect_timeout=1)
        with pytest.raises(redis.AuthenticationError):
            anonymous.set("ns:queue", "mine")
        anonymous.close()
        assert redis.Redis.from_url(server.url).ping()
        assert server.process is not None
        assert server.password not in " ".join(psutil.Process(server.process.pid).cmdline())
        assert stat.S_IMODE((tmp_path / "redis").stat().st_mode) == 0o700
        assert stat.S_IMODE((tmp_path / "redis" / "redis.conf").stat().st_mode) == 0o600
    finally:
        server.stop()


def test_the_redis_url_file_of_nightshift_up_is_owner_only(make_settings: Callable[..., Any]) -> None:
    from api.server import redis_for

    settings = make_settings(redis_url=None)
    settings.home.mkdir(parents=True)
    with redis_for(settings, may_start=True) as url:
        url_file = settings.home / "redis.url"
        assert url_file.read_text() == url and "@127.0.0.1:" in url
        assert stat.S_IMODE(url_file.stat().st_mode) == 0o600


def test_an_older_world_readable_sqlite_database_is_made_owner_only(tmp_path: Path) -> None:
    database = tmp_path / "nightshift.db"
    for path in (database, tmp_path / "nightshift.db-wal", tmp_path / "nightshift.db-shm"):
        path.touch()
        path.chmod(0o644)

    create_db_engine(f"sqlite:///{database}").dispose()

    for path in (database, tmp_path / "nightshift.db-wal", tmp_path / "nightshift.db-shm"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


def test_a_new_sqlite_database_and_its_wal_are_owner_only(tmp_path: Path) -> None:
    from scheduler.store.db import migrate

    engine = create_db_engine(f"sqlite:///{tmp_path / 'new.db'}")
    migrate(engine)
    engine.dispose()

    for name in ("new.db", "new.db-wal", "new.db-shm"):
        if (tmp_path / name).exists():
            assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o600, name
