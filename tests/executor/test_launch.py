"""Building a job's command line and environment, and refusing jobs that cannot start on this node."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from scheduler.errors import ExecutorError
from scheduler.executor import LaunchRequest, build_argv, build_env, start_job
from scheduler.executor.exit_record import with_exit_record

MakeRequest = Callable[..., LaunchRequest]
WORKER_ENV = {
    "PATH": "/usr/bin:/bin",
    "HOME": "/home/worker",
    "LANG": "C.UTF-8",
    "NIGHTSHIFT_DATABASE_URL": "postgresql://nightshift:hunter2@db/nightshift",
    "NIGHTSHIFT_REDIS_URL": "redis://:hunter2@redis:6379/0",
    "NIGHTSHIFT_LLM_API_KEY": "sk-worker",
    "OPENAI_API_KEY": "sk-openai",
    "ANTHROPIC_API_KEY": "sk-ant",
    "GITHUB_TOKEN": "ghp_x",
    "HF_TOKEN": "hf_x",
    "CLIENT_SECRET_VALUE": "s",
    "PGPASSWORD": "kept: no underscore before PASSWORD",
    "DB_PASSWORD": "p",
    "AWS_ACCESS_KEY_ID": "AKIA",
    "AWS_SECRET_ACCESS_KEY": "x",
    "DATABASE_URL": "postgresql://u:p@db/app",
    "REDIS_URL": "redis://redis",
    "CUDA_VISIBLE_DEVICES": "0,1,2,3",
}


def no_program(_: str) -> None:
    return None


def installed(program: str) -> str:
    return f"/usr/local/bin/{program}"


def test_a_plain_job_runs_its_command_under_bin_sh(make_request: MakeRequest) -> None:
    request = make_request("python train.py --lr 3e-4")

    assert build_argv(request) == [
        "/bin/sh",
        "-c",
        with_exit_record("python train.py --lr 3e-4", request.run_token),
    ]


def test_a_conda_job_runs_through_conda_run_without_capturing_output(
    make_request: MakeRequest,
) -> None:
    request = make_request("python train.py", conda_env="torch")
    argv = build_argv(request, which=installed)

    assert argv == [
        "/usr/local/bin/conda",
        *("run", "--no-capture-output", "-n", "torch"),
        *("/bin/sh", "-c", with_exit_record("python train.py", request.run_token)),
    ]


def test_a_conda_env_given_as_a_path_is_selected_with_p(make_request: MakeRequest) -> None:
    argv = build_argv(make_request(conda_env="/opt/envs/torch"), which=installed)

    assert argv[3:5] == ["-p", "/opt/envs/torch"]


def test_a_conda_env_name_that_looks_like_a_flag_is_refused(make_request: MakeRequest) -> None:
    with pytest.raises(ExecutorError, match="not a valid environment name"):
        build_argv(make_request(conda_env="--override-channels"), which=installed)


def test_a_conda_job_on_a_node_without_conda_is_refused_with_a_clear_message(
    make_request: MakeRequest,
) -> None:
    with pytest.raises(ExecutorError) as caught:
        build_argv(make_request(conda_env="torch"), which=no_program)

    assert str(caught.value) == "conda_env 'torch' was requested but conda is not installed on this node"


def test_a_docker_job_on_a_node_without_docker_is_refused_with_a_clear_message(
    make_request: MakeRequest,
) -> None:
    with pytest.raises(ExecutorError) as caught:
        build_argv(make_request(docker_image="pytorch/pytorch:2.4.0"), which=no_program)

    assert str(caught.value) == (
        "docker_image 'pytorch/pytorch:2.4.0' was requested but docker is not installed on this node"
    )


def test_start_job_refuses_a_conda_job_before_starting_anything(
    make_request: MakeRequest,
) -> None:
    request = make_request(conda_env="torch")

    with pytest.raises(ExecutorError, match="conda is not installed"):
        start_job(request, which=no_program)

    assert not request.log_path.exists()


def test_a_docker_job_runs_in_a_named_container_with_its_gpus_workdir_and_env(
    make_request: MakeRequest, tmp_path: Path
) -> None:
    request = make_request(
        "python train.py",
        docker_image="pytorch/pytorch:2.4.0-cuda12.1",
        env={"WANDB_MODE": "offline", "BATCH": "64"},
        checkpoint_dir=tmp_path / "checkpoints" / "12",
    )
    workdir = str(request.workdir)
    checkpoints = str(request.checkpoint_dir)

    argv = build_argv(request, which=installed)

    assert argv == [
        *("/usr/local/bin/docker", "run", "--rm", "--init", "--name", "nightshift-12-1"),
        *("--gpus", '"device=0,1"'),
        *("-v", f"{workdir}:{workdir}", "-v", f"{checkpoints}:{checkpoints}", "-w", workdir),
        *("-e", "BATCH", "-e", "WANDB_MODE"),
        *("-e", "NIGHTSHIFT_TASK_ID", "-e", "NIGHTSHIFT_ATTEMPT", "-e", "NIGHTSHIFT_GPUS"),
        *("-e", "NIGHTSHIFT_RUN_TOKEN", "-e", "NIGHTSHIFT_CHECKPOINT_DIR"),
        *("pytorch/pytorch:2.4.0-cuda12.1", "/bin/sh", "-c"),
        with_exit_record("python train.py", request.run_token),
    ]


def test_a_cpu_only_docker_job_gets_no_gpus_flag(make_request: MakeRequest) -> None:
    argv = build_argv(make_request(docker_image="python:3.11-slim", gpu_indices=()), which=installed)

    assert "--gpus" not in argv


INJECTIONS = ["--privileged", "a b", "-v/:/x", "", "ubuntu;reboot", "ubuntu\n--privileged", "ubuntu\n"]


@pytest.mark.parametrize("image", INJECTIONS)
def test_a_docker_image_name_that_could_inject_flags_is_refused(
    make_request: MakeRequest, image: str
) -> None:
    with pytest.raises(ExecutorError, match="not a valid image name"):
        build_argv(make_request(docker_image=image), which=installed)


def test_a_workdir_with_a_colon_cannot_be_mounted_into_docker(
    make_request: MakeRequest, tmp_path: Path
) -> None:
    request = make_request(docker_image="python:3.11", workdir=tmp_path / "a:b")

    with pytest.raises(ExecutorError, match="cannot be mounted"):
        build_argv(request, which=installed)


def test_conda_and_docker_together_are_refused(make_request: MakeRequest) -> None:
    with pytest.raises(ExecutorError, match="not both"):
        build_argv(make_request(conda_env="torch", docker_image="python:3.11"), which=installed)


def test_the_job_environment_keeps_the_workers_ordinary_variables_and_drops_its_secrets(
    make_request: MakeRequest,
) -> None:
    env = build_env(make_request(), WORKER_ENV)

    inherited = {name for name in WORKER_ENV if name in env and env[name] == WORKER_ENV[name]}
    assert inherited == {"PATH", "HOME", "LANG", "PGPASSWORD"}


def test_the_job_environment_names_its_task_attempt_gpus_and_run_token(
    make_request: MakeRequest, tmp_path: Path
) -> None:
    request = make_request(gpu_indices=(2, 3), checkpoint_dir=tmp_path / "ckpt", run_token="run-12-1-abcdef")

    env = build_env(request, WORKER_ENV)

    assert env["CUDA_VISIBLE_DEVICES"] == "2,3"
    assert env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    assert env["NIGHTSHIFT_GPUS"] == "2,3"
    assert env["NIGHTSHIFT_TASK_ID"] == "12"
    assert env["NIGHTSHIFT_ATTEMPT"] == "1"
    assert env["NIGHTSHIFT_RUN_TOKEN"] == "run-12-1-abcdef"
    assert env["NIGHTSHIFT_CHECKPOINT_DIR"] == str(tmp_path / "ckpt")


def test_a_cpu_only_job_sees_no_gpu_and_no_checkpoint_dir_unless_given(
    make_request: MakeRequest,
) -> None:
    env = build_env(make_request(gpu_indices=()), WORKER_ENV)

    assert env["CUDA_VISIBLE_DEVICES"] == ""
    assert "NIGHTSHIFT_CHECKPOINT_DIR" not in env


def test_the_spec_env_is_added_but_cannot_override_nightshifts_own_variables(
    make_request: MakeRequest,
) -> None:
    spec_env = {"WANDB_MODE": "offline", "NIGHTSHIFT_TASK_ID": "999", "CUDA_VISIBLE_DEVICES": "0,1,2,3"}

    env = build_env(make_request(env=spec_env, gpu_indices=(1,)), {})

    assert env["WANDB_MODE"] == "offline"
    assert env["NIGHTSHIFT_TASK_ID"] == "12"
    assert env["CUDA_VISIBLE_DEVICES"] == "1"


def test_a_job_sharing_its_gpu_is_told_its_share_and_given_it_as_mps_limits(
    make_request: MakeRequest,
) -> None:
    half = make_request(gpu_indices=(1,), gpu_fraction=0.5, gpu_memory_share_mib=71_578)

    env = build_env(half, {})

    assert (env["NIGHTSHIFT_GPU_FRACTION"], env["NIGHTSHIFT_GPU_MEMORY_MIB"]) == ("0.5", "71578")
    assert env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] == "50"
    assert env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] == "0=71578M"  # device 0: the one GPU it sees
    # a spec may set its own MPS limits, not its share
    own = {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "30", "NIGHTSHIFT_GPU_FRACTION": "1"}
    mine = build_env(make_request(env=own, gpu_indices=(1,), gpu_fraction=0.5), {})
    assert (mine["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"], mine["NIGHTSHIFT_GPU_FRACTION"]) == ("30", "0.5")
    assert "NIGHTSHIFT_GPU_MEMORY_MIB" not in mine  # no share of memory known: none said
    # a task with its GPUs alone is told nothing of the kind
    alone = build_env(make_request(gpu_indices=(1,)), {})
    assert not {name for name in alone if "MPS" in name or name.startswith("NIGHTSHIFT_GPU_")}
    # and a docker job is passed them too
    argv = build_argv(replace(half, docker_image="pytorch/pytorch:2.4.0"), which=installed)
    passed = {argv[n + 1] for n, word in enumerate(argv) if word == "-e"}
    assert {
        "NIGHTSHIFT_GPU_FRACTION",
        "NIGHTSHIFT_GPU_MEMORY_MIB",
        "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT",
    } <= passed


def test_a_spec_env_name_that_is_not_an_identifier_is_refused(make_request: MakeRequest) -> None:
    with pytest.raises(ExecutorError, match="env name 'A=B'"):
        build_env(make_request(env={"A=B": "1"}), {})


def test_a_missing_workdir_is_refused_naming_the_folder(make_request: MakeRequest, tmp_path: Path) -> None:
    missing = tmp_path / "no-such-folder"

    with pytest.raises(ExecutorError, match=f"workdir '{missing}' does not exist"):
        start_job(make_request(workdir=missing))


@pytest.mark.parametrize("token", ["", "short", "has space in it", "x" * 201, "run-token-1234\n"])
def test_a_run_token_too_short_or_odd_to_match_safely_is_refused(
    make_request: MakeRequest, token: str
) -> None:
    with pytest.raises(ExecutorError, match="run token"):
        start_job(make_request(run_token=token))
