"""Redis restarted under a running cluster (an upgrade, a crash that systemd restarts; AOF kept, as the
docs recommend): the worker rides it out. Its jobs go on and finish once, and it claims new work after.

Before, the worker's loop died of the first refused connection: it stopped every job as at a shutdown
(`worker_shutdown`, requeued) while its heartbeat thread lived on, so its node looked up and took
assignments that nothing claimed.
"""

from __future__ import annotations

from tests.reliability.stack import Stack, poll

JOB = "sleep 4; echo done >> {folder}/out.$NIGHTSHIFT_TASK_ID"


def test_a_worker_rides_out_a_redis_restart_and_its_jobs_finish_once(tmp_path, restartable_redis):
    out = tmp_path / "out"
    out.mkdir()
    stack = Stack(tmp_path, restartable_redis.url)
    try:
        stack.start_api()
        stack.start("scheduler", "scheduler")
        stack.start_worker("w1")
        spec = {"command": JOB.format(folder=out), "workdir": str(out)}
        ids = [stack.submit(spec) for _ in range(2)]
        poll(lambda: set(stack.statuses(ids).values()) == {"running"}, what="both tasks running")

        restartable_redis.stop()  # a clean shutdown: the AOF keeps queue and leases
        restartable_redis.start()

        poll(lambda: set(stack.statuses(ids).values()) == {"succeeded"}, what="both tasks to succeed")
        assert all(stack.tasks.get_any(task_id).attempts_count == 1 for task_id in ids), stack.log("w1")
        assert [(out / f"out.{task_id}").read_text() for task_id in ids] == ["done\n", "done\n"]
        later = stack.submit(spec)  # the worker still claims work
        poll(lambda: stack.statuses([later])[later] == "succeeded", what="a task submitted after it")
        assert stack.processes["w1"].poll() is None
    finally:
        stack.close()
