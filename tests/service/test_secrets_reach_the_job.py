"""A job gets the secrets its spec names as environment variables, read as it starts; the log's header and
the task never show them, and a secret removed while its task waits fails the task as it starts, saying
why."""

from __future__ import annotations

from scheduler.service import Cluster
from tests.conftest import opened_cluster, wait_until

VALUE = "hf_s3cr3t_value_1234"


def _ended(cluster: Cluster, task_id: int) -> str:
    status = cluster.tasks.get_any(task_id).status
    return status if status in ("succeeded", "failed", "cancelled") else ""


def test_the_job_gets_its_secret_the_task_shows_only_its_name(cluster, make_identity, start_worker, tmp_path):
    who, _ = make_identity("alice", "vision")
    cluster.secrets.put("alice", "HF_TOKEN", "an old value")
    cluster.secrets.put("alice", "HF_TOKEN", VALUE)  # the value at its start is the one it gets
    start_worker()
    task, _ = cluster.submit(
        who, {"command": "echo token=$HF_TOKEN", "gpus": 0, "secrets": ["HF_TOKEN"], "workdir": str(tmp_path)}
    )

    assert wait_until(lambda: _ended(cluster, task.id)) == "succeeded"
    log = cluster.log_path(task.id).read_text()
    assert f"token={VALUE}" in log.splitlines()  # the job's own output, its business
    assert log.count(VALUE) == 1  # nowhere else: not in the header, not in the command
    assert cluster.tasks.get_any(task.id).spec["secrets"] == ["HF_TOKEN"]
    assert VALUE not in str(cluster.tasks.get_any(task.id).spec)


def test_a_secret_removed_while_its_task_waits_fails_the_task_as_it_starts(
    cluster, make_identity, start_worker, tmp_path
):
    who, _ = make_identity("alice", "vision")
    cluster.secrets.put("alice", "HF_TOKEN", VALUE)
    task, _ = cluster.submit(
        who, {"command": "true", "gpus": 0, "secrets": ["HF_TOKEN"], "workdir": str(tmp_path)}
    )
    cluster.hold(who, task.id)
    cluster.secrets.remove("alice", "HF_TOKEN")
    start_worker()
    cluster.release(who, task.id)

    assert wait_until(lambda: _ended(cluster, task.id)) == "failed"
    message = cluster.tasks.get_any(task.id).message or ""
    assert message.startswith("secret HF_TOKEN of alice is gone (removed after the task was queued)")
    assert "`nightshift secret set HF_TOKEN`" in message


def test_a_worker_whose_box_lacks_the_key_fails_the_task_saying_what_to_set(
    cluster, make_identity, make_settings, redis_url, start_worker, tmp_path
):
    who, _ = make_identity("alice", "vision")
    cluster.secrets.put("alice", "HF_TOKEN", VALUE)  # sealed with the server's key, in its data folder
    gpu_box = make_settings(database_url=cluster.settings.database_url, home=tmp_path / "gpu-box")
    with opened_cluster(gpu_box, redis_url) as elsewhere:
        start_worker(node="box-b", on=elsewhere)
        task, _ = cluster.submit(
            who, {"command": "true", "gpus": 0, "secrets": ["HF_TOKEN"], "workdir": str(tmp_path)}
        )
        assert wait_until(lambda: _ended(cluster, task.id)) == "failed"
    message = cluster.tasks.get_any(task.id).message or ""
    assert message.startswith("the secrets of this task cannot be opened on node box-b: no secrets key")
    assert "NIGHTSHIFT_SECRETS_KEY" in message and "`nightshift secret key`" in message
    assert not (tmp_path / "gpu-box" / "secrets.key").exists()
