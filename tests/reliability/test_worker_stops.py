"""Through the worker: no survivor after cancel or timeout (children and a `setsid` grandchild), graceful
stops with the spec's signal and grace, orphans of this node killed at start, assignments of a dead node
given back."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest

from scheduler.clock import now_ms
from scheduler.executor import TOKEN_VAR, find_processes_with_token, make_run_token
from scheduler.executor.cgroups import JobCgroup, JobCgroups
from scheduler.gpus import SimulatedGpus
from scheduler.worker import Worker, token_node_of
from tests.conftest import is_alive, read_pids, wait_until
from tests.reliability.conftest import JOB_FAMILY, JOB_FAMILY_SCRUBBED, settled


@pytest.mark.parametrize("scrubbed", [False, True], ids=["family", "scrubbed-child"])
@pytest.mark.parametrize("how", ["cancel", "timeout"])
def test_a_job_with_children_and_a_setsid_grandchild_leaves_no_survivor(
    cluster, make_identity, start_worker, submit_to, tmp_path, how, scrubbed, request
):
    if scrubbed:  # a child with no group and no token: only the job's cgroup holds it
        request.getfixturevalue("job_cgroups")
    start_worker()
    pids_file = tmp_path / "pids"
    family = JOB_FAMILY_SCRUBBED if scrubbed else JOB_FAMILY
    spec = {"command": family.format(pids=pids_file), "workdir": str(tmp_path), "grace_seconds": 0.5}
    if how == "timeout":
        spec["time_limit_minutes"] = 0.05  # 3 s
    task = submit_to(spec)
    pids = read_pids(pids_file, 5 if scrubbed else 4)
    escaped = [pid for pid in pids if os.getsid(pid) != os.getsid(pids[-1])]
    assert escaped, "the setsid grandchild left the job's session"

    if how == "cancel":
        who, _ = make_identity()
        cluster.cancel(who, task.id)

    assert wait_until(lambda: settled(cluster, task.id)) == ("cancelled" if how == "cancel" else "failed")
    wait_until(lambda: not any(is_alive(pid) for pid in pids))
    assert cluster.tasks.get_any(task.id).reason == ("cancelled" if how == "cancel" else "timeout")


def test_a_cancel_sends_the_specs_stop_signal_and_waits_its_grace_period(
    cluster, make_identity, start_worker, submit_to, tmp_path
):
    start_worker()
    saved = tmp_path / "saved"
    ready = tmp_path / "ready"
    command = f"trap 'echo saved-on-int > {saved}; exit 0' INT; touch {ready}; while :; do sleep 0.05; done"
    task = submit_to(
        {"command": command, "workdir": str(tmp_path), "stop_signal": "INT", "grace_seconds": 20}
    )
    wait_until(ready.exists)
    who, _ = make_identity()

    cluster.cancel(who, task.id)

    assert wait_until(lambda: settled(cluster, task.id)) == "cancelled"
    assert saved.read_text().strip() == "saved-on-int"
    assert "SIGINT, SIGKILL after 20 s" in cluster.log_path(task.id).read_text()


def test_a_starting_worker_kills_orphaned_job_processes_of_its_node_only(cluster, start_worker, tmp_path):
    # Given job processes left behind on this machine: one of node-a's tasks that SQL no longer gives it,
    # one of another node, and one of a node-a of another nightshift (another database) on this machine
    orphan_token = make_run_token(token_node_of("node-a", cluster), 999, "deadbeef-1")
    foreign_token = make_run_token(token_node_of("node-b", cluster), 998, "deadbeef-2")
    other_cluster_token = make_run_token("node-a.0123456789", 997, "deadbeef-3")
    spawned, spawned_tokens = [], (orphan_token, foreign_token, other_cluster_token)
    for token in spawned_tokens:
        env = {**os.environ, TOKEN_VAR: token}
        spawned.append(subprocess.Popen(["setsid", "sleep", "300"], env=env, start_new_session=True))
    try:
        wait_until(lambda: all(find_processes_with_token(token) for token in spawned_tokens))

        # When node-a's worker starts
        start_worker("node-a")

        # Then node-a's orphan is killed; node-b's process and the other nightshift's are left alone
        wait_until(lambda: not find_processes_with_token(orphan_token))
        assert find_processes_with_token(foreign_token)
        assert find_processes_with_token(other_cluster_token)
    finally:
        for process in spawned:
            process.kill()
            process.wait()


def test_a_starting_worker_empties_and_removes_the_job_cgroups_its_node_left_behind(
    cluster, start_worker, job_cgroups
):
    # Given job cgroups left by a previous life of node-a's worker (one still holding a process with no
    # run token) and one of another node
    orphan = job_cgroups.of(make_run_token(token_node_of("node-a", cluster), 996, "deadbeef-4"))
    empty = JobCgroup(job_cgroups.base / f"{token_node_of('node-a', cluster)}:spare1-1")  # a spare shell's
    foreign = job_cgroups.of(make_run_token(token_node_of("node-b", cluster), 994, "deadbeef-6"))
    for cgroup in (orphan, empty, foreign):
        cgroup.path.mkdir()
    sleepers = [subprocess.Popen(["sleep", "300"], env={}, start_new_session=True) for _ in range(2)]
    try:
        assert orphan.join(sleepers[0].pid) and foreign.join(sleepers[1].pid)

        # When node-a's worker starts
        start_worker("node-a")

        # Then node-a's cgroups are emptied and removed; node-b's is left alone
        wait_until(lambda: not orphan.path.exists() and not empty.path.exists())
        assert sleepers[0].wait(10) == -9
        assert foreign.pids() == [sleepers[1].pid]
    finally:
        for sleeper in sleepers:
            sleeper.kill()
            sleeper.wait()
        foreign.kill()
        foreign.remove()


def test_a_workers_look_for_orphans_leaves_its_own_jobs_and_spares_alone(
    cluster, start_worker, submit_to, tmp_path, job_cgroups
):
    # Given a worker running a job (in a spare shell's cgroup) with spares waiting beside it (with a long
    # lease: on a loaded machine a 5-s stall of the whole test process once cost the job its lease)
    cluster.settings.lease_ttl_s = 60.0
    worker = start_worker("node-a")
    pid_file = tmp_path / "pid"
    task = submit_to({"command": f"echo $$ > {pid_file}; exec sleep 300", "workdir": str(tmp_path)})
    (pid,) = read_pids(pid_file, 1)
    wait_until(lambda: worker.job_of(task.id) is not None)  # launched and recorded as this worker's
    own = JobCgroups(job_cgroups.base, token_node_of("node-a", cluster))
    before = set(own.owned())

    # When it looks for orphaned job processes of its node
    assert worker.kill_orphans() == []

    # Then its job runs on, and its cgroups are all still there
    assert is_alive(pid) and settled(cluster, task.id) == ""
    assert set(own.owned()) == before and len(before) >= 2


def test_a_running_worker_finds_a_leftover_of_its_node_by_its_token_without_a_restart(
    cluster, start_worker, submit_to, tmp_path
):
    # Given a running worker that looks for orphans often, and a job of its own started meanwhile
    worker = start_worker("node-a", orphan_sweep_s=0.05)
    pid_file = tmp_path / "pid"
    task = submit_to({"command": f"echo $$ > {pid_file}; exec sleep 300", "workdir": str(tmp_path)})
    (pid,) = read_pids(pid_file, 1)
    wait_until(lambda: worker.job_of(task.id) is not None)

    # When a process of one of node-a's tasks that it no longer runs turns up (a job's child that no
    # sweep at its job's end saw), and one of another node
    orphan_token = make_run_token(token_node_of("node-a", cluster), 993, "deadbeef-7")
    foreign_token = make_run_token(token_node_of("node-b", cluster), 992, "deadbeef-8")
    spawned = [
        subprocess.Popen(["sleep", "300"], env={**os.environ, TOKEN_VAR: token}, start_new_session=True)
        for token in (orphan_token, foreign_token)
    ]
    looks: list[list[str]] = []
    look = worker.kill_orphans
    worker.kill_orphans = lambda: looks.append(look()) or looks[-1]  # type: ignore[method-assign]
    try:
        # Then the worker kills node-a's at its next look, leaves node-b's alone, and its own job runs on
        assert spawned[0].wait(10) == -9
        wait_until(lambda: len(looks) >= 3)  # three more looks for orphans
        assert spawned[1].poll() is None
        assert is_alive(pid) and settled(cluster, task.id) == ""
    finally:
        for process in spawned:
            process.kill()
            process.wait()


def test_assignments_of_a_node_that_never_claims_them_go_back_to_the_queue(cluster, make_identity):
    who, _ = make_identity()
    task, _ = cluster.submit(who, {"command": "true"})
    score = cluster.queue.head(1)[0][1]
    assert cluster.queue.assign(task.id, "dead-node", [0], 1_000)

    assert cluster.queue.return_stale_assignments(1_500, 1_000, alive_nodes=[]) == []  # not old enough
    assert cluster.queue.return_stale_assignments(5_000, 1_000, alive_nodes=["dead-node"]) == []  # alive
    assert cluster.queue.return_stale_assignments(5_000, 1_000, alive_nodes=[]) == [task.id]

    assert cluster.queue.head(1) == [(task.id, score)]
    assert cluster.queue.assignments() == {}
    assert cluster.queue.claim("dead-node", now_ms(), 5_000) is None  # its inbox entry is gone too


def test_an_assignment_claimed_first_is_not_given_back(cluster, make_identity):
    who, _ = make_identity()
    task, _ = cluster.submit(who, {"command": "true"})
    assert cluster.queue.assign(task.id, "node-a", [0], 1_000)
    claim = cluster.queue.claim("node-a", 2_000, 5_000)

    assert claim is not None and claim.task_id == task.id
    assert cluster.queue.return_assignment(task.id, "node-a") is False
    assert cluster.queue.length() == 0


if sys.platform != "linux":  # pragma: no cover
    pytestmark = pytest.mark.skip("process groups and /proc are Linux-only")


def test_restarting_the_worker_three_times_requeues_its_task_each_time_and_never_fails_it(
    cluster, make_identity, tmp_path
):
    """A restart is not the task's fault: three in a row must not read as 'worker lost 3 times'."""
    who, _ = make_identity()
    ready = tmp_path / "ready"
    task, _ = cluster.submit(
        who, {"gpus": 1, "command": f"touch {ready}; sleep 300", "workdir": str(tmp_path), "grace_seconds": 1}
    )
    for _ in range(3):
        ready.unlink(missing_ok=True)
        assert cluster.queue.assign(task.id, "node-a", [0], now_ms())
        _run_worker_until(cluster, ready)
        assert cluster.tasks.get_any(task.id).status == "queued"
    reasons = [attempt.reason for attempt in cluster.tasks.attempts(task.id)]
    assert reasons == ["worker_shutdown"] * 3
    assert (
        "its worker is shutting down; the task goes back to the queue"
        in cluster.log_path(task.id).read_text()
    )


def test_a_graceful_stop_longer_than_a_lease_ttl_is_not_cut_short_by_the_job_sentinel(
    cluster, make_identity, tmp_path
):
    """The sentinel kills a silent worker's jobs; a worker stopping its jobs gracefully is not silent."""
    # Given a worker whose sentinel may hear nothing for 1.5 s (TTL 2 s), running a job that takes 3 s to
    # save its work once told to stop
    cluster.settings.lease_ttl_s = 2.0
    who, _ = make_identity()
    saved, ready = tmp_path / "saved", tmp_path / "ready"
    command = (
        f"trap 'sleep 3; echo saved > {saved}; exit 0' TERM; touch {ready}; while :; do sleep 0.05; done"
    )
    task, _ = cluster.submit(
        who, {"gpus": 1, "command": command, "workdir": str(tmp_path), "grace_seconds": 20}
    )
    assert cluster.queue.assign(task.id, "node-a", [0], now_ms())

    # When the worker runs it, then stops
    worker = _run_worker_until(cluster, ready)

    # Then the job had its grace: it saved its work
    assert worker.sentinel_silence_s() == 1.5
    assert saved.read_text() == "saved\n"


def _run_worker_until(cluster, ready) -> Worker:
    """Run a worker of node-a in a thread until the file `ready` exists, then stop it (its jobs stop
    gracefully) and wait for its loop to end."""
    worker = Worker(cluster, "node-a", SimulatedGpus("4x24", node="node-a"), base_env=dict(os.environ))
    worker.publish_node()
    stop = threading.Event()
    loop = threading.Thread(target=worker.run, args=(stop,), daemon=True)
    loop.start()
    wait_until(ready.exists)
    stop.set()
    loop.join(timeout=30)
    assert not loop.is_alive()
    return worker
