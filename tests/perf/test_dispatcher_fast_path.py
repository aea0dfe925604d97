"""The dispatcher's fast path (no wording, cached rows, cheap Redis check) decides like the full pass."""

from __future__ import annotations

from scheduler.clock import now_ms
from scheduler.dispatcher import Dispatcher
from scheduler.nodes import NodeGpu


def _node(cluster, gpus: int = 2) -> None:
    inventory = [NodeGpu(i, "SIM", 24 * 1024, 24 * 1024) for i in range(gpus)]
    cluster.nodes.publish("node-a", inventory, now_ms(), "simulated")


def _assigned(cluster) -> set[int]:
    return set(cluster.queue.assignments())


def test_a_cpu_only_task_behind_blocked_gpu_tasks_still_starts(cluster, make_identity, tmp_path):
    who, _ = make_identity()
    _node(cluster, 2)
    dispatcher = Dispatcher(cluster)
    first, _ = cluster.submit(who, {"command": "true", "gpus": 2, "workdir": str(tmp_path)})
    blocked, _ = cluster.submit(who, {"command": "true", "gpus": 2, "workdir": str(tmp_path)})
    cpu, _ = cluster.submit(who, {"command": "true", "gpus": 0, "workdir": str(tmp_path)})
    decisions = dispatcher.run_pass()
    started = {start.task_id for start in decisions.starts}
    assert first.id in started and cpu.id in started and blocked.id not in started
    assert dispatcher.run_pass().starts == ()  # the assigned tasks hold the GPUs: nothing more starts


def test_a_task_whose_parent_failed_fails_even_when_gpus_are_full(cluster, make_identity, tmp_path):
    who, _ = make_identity()
    _node(cluster, 2)
    dispatcher = Dispatcher(cluster)
    parent, _ = cluster.submit(who, {"command": "true", "gpus": 0, "workdir": str(tmp_path)})
    child, _ = cluster.submit(
        who, {"command": "true", "gpus": 1, "workdir": str(tmp_path), "depends_on": [parent.id]}
    )
    cluster.cancel(who, parent.id)
    hog, _ = cluster.submit(who, {"command": "true", "gpus": 2, "workdir": str(tmp_path)})
    waiting, _ = cluster.submit(who, {"command": "true", "gpus": 2, "workdir": str(tmp_path)})
    decisions = dispatcher.run_pass()
    assert hog.id in {start.task_id for start in decisions.starts}
    assert child.id in decisions.fail
    assert cluster.tasks.get_any(child.id).status == "failed"
    assert cluster.tasks.get_any(waiting.id).status == "queued"


def test_the_row_cache_sees_a_requeued_task_afresh(cluster, make_identity, tmp_path):
    who, _ = make_identity()
    _node(cluster, 1)
    dispatcher = Dispatcher(cluster)
    task, _ = cluster.submit(who, {"command": "true", "gpus": 1, "workdir": str(tmp_path), "retries": 1})
    assert [s.task_id for s in dispatcher.run_pass().starts] == [task.id]
    claim = cluster.queue.claim("node-a", now_ms(), 30_000)
    assert claim is not None and cluster.tasks.mark_running(task.id, claim.token, "node-a", claim.gpu_indices)
    assert dispatcher.run_pass().starts == ()  # running: holds the GPU
    cluster.tasks.requeue(task.id, claim.token, "lost_worker")
    cluster.queue.release(task.id, claim.token)
    cluster.queue.enqueue(task.id, cluster.score(cluster.tasks.get_any(task.id)))
    assert [s.task_id for s in dispatcher.run_pass().starts] == [task.id]


def test_the_minute_check_finds_a_lost_queue_entry_and_nothing_when_consistent(
    cluster, make_identity, tmp_path
):
    who, _ = make_identity()
    dispatcher = Dispatcher(cluster)
    task, _ = cluster.submit(who, {"command": "true", "gpus": 1, "workdir": str(tmp_path)})
    assert dispatcher._redis_suspects(None) == set()
    cluster.queue.remove(task.id)
    assert dispatcher._redis_suspects(None) == {task.id}
    dispatcher._reconcile_redis(-1e9)
    assert cluster.queue.position(task.id) == 0
