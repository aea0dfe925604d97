"""Safe execution through the worker: jobs run as the mapped OS account (never silently as root), see none
of the service's secrets, and docker jobs use only allow-listed images with nightshift's own flags."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from scheduler.accounts import account_for, lookup_account, root_worker_warning
from scheduler.clock import now_ms
from scheduler.errors import ExecutorError
from scheduler.executor import LaunchRequest, build_argv
from scheduler.executor.cgroups import FOLDER
from scheduler.executor.exit_record import with_exit_record
from scheduler.gpus import SimulatedGpus
from scheduler.service import Cluster
from scheduler.worker import Worker
from tests.conftest import wait_until

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="switching accounts needs root")


# These tasks are assigned by hand and no scheduler runs: a lease lost to a stall of the loaded test machine
# (the 5-s test lease was once outlasted in CI) would leave the task queued for good, so they get 30 s.
STEADY = {"lease_ttl_s": 30.0}


def _run(cluster: Cluster, run_in_thread, base_env: dict[str, str] | None = None) -> Worker:
    """A worker loop in a thread; tasks are assigned to it by `_submit` (the worker is under test)."""
    worker = Worker(
        cluster, "node-a", SimulatedGpus("4x24", node="node-a"), base_env=base_env or dict(os.environ)
    )
    worker.publish_node()
    run_in_thread(worker.run)
    return worker


def _submit(cluster: Cluster, who, spec: dict):
    """Submit, then assign to node-a as the scheduler would."""
    task, _ = cluster.submit(who, spec)
    assert cluster.queue.assign(task.id, "node-a", [], now_ms())
    return task


def _settled(cluster: Cluster, task_id: int) -> str:
    status = cluster.tasks.get_any(task_id).status
    return status if status in ("succeeded", "failed", "cancelled") else ""


@as_root
def test_a_root_worker_runs_a_job_as_the_os_account_mapped_to_its_user(
    make_cluster, make_identity_on, run_in_thread, tmp_path
):
    cluster = make_cluster(allow_root_jobs=False, run_as={"alice": "nobody"}, **STEADY)
    who = make_identity_on(cluster, "alice", "vision")
    _run(cluster, run_in_thread)

    task = _submit(cluster, who, {"command": 'echo "uid=$(id -u) home=$HOME user=$USER"', "gpus": 0})

    assert wait_until(lambda: _settled(cluster, task.id)) == "succeeded"
    nobody = lookup_account("nobody")
    assert f"uid={nobody.uid} home={nobody.home} user=nobody" in cluster.log_path(task.id).read_text()


@as_root
def test_a_job_run_as_another_account_is_in_its_own_cgroup_too(
    make_cluster, make_identity_on, run_in_thread, job_cgroups
):
    # (it starts directly, not in a spare shell: the worker moves it in before it runs anything)
    cluster = make_cluster(allow_root_jobs=False, run_as={"alice": "nobody"}, **STEADY)
    who = make_identity_on(cluster, "alice", "vision")
    _run(cluster, run_in_thread)

    task = _submit(cluster, who, {"command": "grep ^0:: /proc/self/cgroup; id -u", "gpus": 0})

    assert wait_until(lambda: _settled(cluster, task.id)) == "succeeded"
    log = cluster.log_path(task.id).read_text()
    assert f"/{FOLDER}/" in log and f":task{task.id}:" in log
    assert str(lookup_account("nobody").uid) in log.splitlines()


@as_root
def test_a_root_worker_refuses_a_job_whose_user_has_no_os_account(
    make_cluster, make_identity_on, run_in_thread, tmp_path
):
    cluster = make_cluster(allow_root_jobs=False, run_as={"alice": "nobody"}, **STEADY)
    who = make_identity_on(cluster, "bob", "nlp")
    _run(cluster, run_in_thread)
    marker = tmp_path / "ran-as-root"

    task = _submit(cluster, who, {"command": f"touch {marker}", "gpus": 0, "retries": 3})

    assert wait_until(lambda: _settled(cluster, task.id)) == "failed"
    row = cluster.tasks.get_any(task.id)
    assert row.reason == "no_os_account"
    assert "user 'bob' has no OS account" in (row.message or "")
    assert row.attempts_count == 1  # refused, never retried
    assert not marker.exists()


def test_the_account_rules_never_fall_back_to_root_silently():
    root, user = (lambda: 0), (lambda: 1000)

    assert account_for("alice", {}, allow_root_jobs=False, euid=user) is None  # not root: as the worker
    assert account_for("alice", {}, allow_root_jobs=True, euid=root) is None  # explicitly allowed
    with pytest.raises(ExecutorError) as unmapped:
        account_for("alice", {}, allow_root_jobs=False, euid=root)
    with pytest.raises(ExecutorError) as mapped_to_root:
        account_for("alice", {"alice": "root"}, allow_root_jobs=False, euid=root)
    with pytest.raises(ExecutorError) as no_such_account:
        account_for("alice", {"alice": "no-such-account-here"}, allow_root_jobs=True, euid=root)
    assert {e.value.details["reason"] for e in (unmapped, mapped_to_root, no_such_account)} == {
        "no_os_account"
    }
    assert account_for("alice", {"alice": "nobody"}, allow_root_jobs=False, euid=root).name == "nobody"


def test_a_refusal_suggests_a_mapping_that_would_work() -> None:
    root = lambda: 0  # noqa: E731

    def refusal(user: str) -> str:
        with pytest.raises(ExecutorError) as refused:
            account_for(user, {}, allow_root_jobs=False, euid=root)
        return refused.value.message

    # an OS account of the same name that is not root: map the user to it
    assert """NIGHTSHIFT_RUN_AS='{"nobody": "nobody"}'""" in refusal("nobody")
    # 'root' (the local admin of `nightshift up` run as root): mapping it to root would be refused too
    assert """NIGHTSHIFT_RUN_AS='{"root": "ACCOUNT"}'""" in refusal("root")
    assert """NIGHTSHIFT_RUN_AS='{"carol-no-account": "ACCOUNT"}'""" in refusal("carol-no-account")
    assert "NIGHTSHIFT_ALLOW_ROOT_JOBS=true" in refusal("root")


def test_a_root_worker_says_at_start_which_jobs_it_will_refuse() -> None:
    warning = root_worker_warning({"bob": "bob", "alice": "alice"}, allow_root_jobs=False, euid=0)

    assert warning is not None
    assert "mapped: alice, bob" in warning and "NIGHTSHIFT_ALLOW_ROOT_JOBS=true" in warning
    assert "mapped: none" in (root_worker_warning({}, allow_root_jobs=False, euid=0) or "")
    assert root_worker_warning({}, allow_root_jobs=True, euid=0) is None
    assert root_worker_warning({}, allow_root_jobs=False, euid=1000) is None


def test_a_job_started_by_the_worker_sees_none_of_the_services_secrets(
    make_cluster, make_identity_on, run_in_thread, tmp_path
):
    cluster = make_cluster(**STEADY)
    who = make_identity_on(cluster, "alice", "vision")
    secrets = {
        "NIGHTSHIFT_DATABASE_URL": "postgresql://u:pw@db/x",
        "NIGHTSHIFT_REDIS_URL": "redis://:pw@redis",
        "NIGHTSHIFT_TOKEN": "ns_secret",
        "NIGHTSHIFT_LLM_API_KEY": "sk-1",
        "OPENAI_API_KEY": "sk-2",
        "DATABASE_URL": "postgresql://u:pw@db/y",
        "GITHUB_TOKEN": "ghp_x",
        "AWS_SECRET_ACCESS_KEY": "aws",
    }
    _run(cluster, run_in_thread, base_env={"PATH": os.environ["PATH"], "LANG": "C.UTF-8", **secrets})
    dump = tmp_path / "env.txt"

    task = _submit(cluster, who, {"command": f"env > {dump}", "gpus": 0, "workdir": str(tmp_path)})

    assert wait_until(lambda: _settled(cluster, task.id)) == "succeeded"
    seen = dict(line.split("=", 1) for line in dump.read_text().splitlines() if "=" in line)
    assert not set(secrets) & set(seen)
    assert not {value for value in secrets.values()} & set(seen.values())
    assert seen["LANG"] == "C.UTF-8"
    assert seen["NIGHTSHIFT_TASK_ID"] == str(task.id)


def test_a_docker_image_outside_the_allow_list_is_refused_with_a_clear_reason(
    make_cluster, make_identity_on, run_in_thread, tmp_path
):
    cluster = make_cluster(docker_images_allowed=["pytorch/pytorch:*", "nvcr.io/nvidia/*"], **STEADY)
    who = make_identity_on(cluster, "alice", "vision")
    _run(cluster, run_in_thread)

    task = _submit(cluster, who, {"command": "true", "docker_image": "evil/miner:latest", "gpus": 0})

    assert wait_until(lambda: _settled(cluster, task.id)) == "failed"
    row = cluster.tasks.get_any(task.id)
    assert row.reason == "docker_image_not_allowed"
    assert "'evil/miner:latest' is not allowed" in (row.message or "")


def _docker_request(tmp_path: Path, **overrides) -> LaunchRequest:
    fields = {
        "task_id": 3,
        "attempt": 1,
        "command": "python train.py",
        "workdir": tmp_path / "work",
        "log_path": tmp_path / "3.log",
        "gpu_indices": (1,),
        "env": {"SEED": "1"},
        "conda_env": None,
        "docker_image": "pytorch/pytorch:2.4.0",
        "checkpoint_dir": tmp_path / "ckpt",
        "time_limit_s": None,
        "run_token": "node-a:task3:abcd-1",
        "docker_images_allowed": ("pytorch/pytorch:*",),
    }
    fields.update(overrides)
    return LaunchRequest(**fields)


def test_a_docker_job_gets_only_nightshifts_flags_and_mounts(tmp_path):
    argv = build_argv(
        _docker_request(tmp_path, run_as=lookup_account("nobody")), which=lambda _: "/usr/bin/docker"
    )

    image_at = argv.index("pytorch/pytorch:2.4.0")
    flags = argv[2:image_at]
    mounts = [flags[i + 1] for i, flag in enumerate(flags) if flag == "-v"]
    assert argv[:2] == ["/usr/bin/docker", "run"]
    assert argv[image_at + 1 :] == [
        "/bin/sh",
        "-c",
        with_exit_record("python train.py", "node-a:task3:abcd-1"),
    ]
    assert mounts == [f"{tmp_path / 'work'}:{tmp_path / 'work'}", f"{tmp_path / 'ckpt'}:{tmp_path / 'ckpt'}"]
    assert {flag for flag in flags if flag.startswith("-")} == {
        "--rm",
        "--init",
        "--name",
        "--user",
        "--gpus",
        "-v",
        "-w",
        "-e",
    }
    assert not {"--privileged", "--network", "--pid", "--cap-add", "--device", "--security-opt"} & set(flags)
    nobody = lookup_account("nobody")
    assert flags[flags.index("--user") + 1] == f"{nobody.uid}:{nobody.gid}"


@pytest.mark.parametrize(
    "image", ["ubuntu:22.04", "pytorch/pytorch", "--privileged", "pytorch/pytorch:2.4 -v /:/h"]
)
def test_images_that_are_not_allowed_or_not_names_never_reach_docker(tmp_path, image):
    with pytest.raises(ExecutorError):
        build_argv(_docker_request(tmp_path, docker_image=image), which=lambda _: "/usr/bin/docker")
