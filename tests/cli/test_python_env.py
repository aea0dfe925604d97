"""A job runs the `python` of the virtualenv or conda env active where it was submitted (as `nohup` or
Slurm's `--export=ALL` would), unless the spec chooses its own environment or `--worker-env` says not to."""

from __future__ import annotations

import json
import os

import pytest

from api.cli.python_env import active_python_env, with_python_env
from tests.cli.conftest import cli_as

VENV = {"PATH": "/home/alice/venv/bin:/usr/bin", "VIRTUAL_ENV": "/home/alice/venv", "HOME": "/home/alice"}
CONDA = {"PATH": "/opt/conda/envs/torch/bin:/usr/bin", "CONDA_PREFIX": "/opt/conda/envs/torch",
         "CONDA_DEFAULT_ENV": "torch"}  # fmt: skip


def test_an_active_virtualenv_gives_the_job_this_shells_path_and_says_so():
    notes: list[str] = []
    spec = with_python_env({"command": "python train.py", "env": {"SEED": "1"}}, VENV, notes)

    assert spec["env"] == {"PATH": VENV["PATH"], "VIRTUAL_ENV": "/home/alice/venv", "SEED": "1"}
    assert notes == [
        "the job gets this shell's PATH: virtualenv /home/alice/venv is active here, so its `python` runs "
        "(--worker-env: the worker's PATH instead)"
    ]
    conda_notes: list[str] = []
    assert with_python_env({"command": "python t.py"}, CONDA, conda_notes)["env"] == CONDA
    assert "conda env torch is active here" in conda_notes[0]


@pytest.mark.parametrize(
    "spec",
    [
        {"command": "python t.py", "conda_env": "torch"},  # conda run chooses its own
        {"command": "python t.py", "docker_image": "pytorch/pytorch"},
        {"command": "python t.py", "env": {"PATH": "/opt/bin:/usr/bin"}},  # the spec's own PATH
    ],
)
def test_a_spec_that_chooses_its_environment_keeps_it(spec):
    notes: list[str] = []
    assert with_python_env(spec, VENV, notes) == spec and notes == []


def test_nothing_is_carried_without_an_active_env():
    assert active_python_env({"PATH": "/usr/bin", "HOME": "/root"}) == {}
    assert active_python_env({"VIRTUAL_ENV": "/v"}) == {}  # no PATH to give
    assert with_python_env({"command": "python t.py"}, {"PATH": "/usr/bin"}, []) == {"command": "python t.py"}


def test_submit_from_an_activated_virtualenv_and_with_worker_env(
    cluster, a100_node, make_identity, monkeypatch, tmp_path
):
    _, alice = make_identity("alice", "vision")
    monkeypatch.setenv("VIRTUAL_ENV", VENV["VIRTUAL_ENV"])
    monkeypatch.setenv("PATH", f"{VENV['VIRTUAL_ENV']}/bin:{os.environ['PATH']}")
    with cli_as(cluster, alice, monkeypatch, tmp_path / "alice") as nightshift:
        carried = nightshift("submit", "--json", "--", "python", "train.py")
        plain = nightshift("submit", "--json", "--worker-env", "--", "python", "train.py")

    assert carried.exit_code == 0, carried.output
    env = json.loads(carried.stdout)["spec"]["env"]
    assert env["VIRTUAL_ENV"] == "/home/alice/venv" and env["PATH"].startswith("/home/alice/venv/bin:")
    assert "virtualenv /home/alice/venv is active here" in carried.stderr
    assert plain.exit_code == 0, plain.output
    assert not json.loads(plain.stdout)["spec"].get("env") and "active here" not in plain.stderr
