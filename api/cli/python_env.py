"""Which Python a submitted job runs: the one active in the submitting shell, as `nohup` would run it.

A job runs in its worker's environment, not in the shell that submitted it. Someone who tried
`python train.py` in an activated virtualenv (or conda env) expects the job to run that same `python`, as
`nohup python train.py &` or Slurm's default `sbatch --export=ALL` would. So when one is active here,
`submit` gives the job this shell's PATH and the variables that name the env, and says so. Not with
`--conda` or `--docker` (they choose their own), not when the spec sets PATH itself, not with `--worker-env`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

CARRIED = ("PATH", "VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV")


def active_python_env(environ: Mapping[str, str]) -> dict[str, str]:
    """PATH and the variables naming the virtualenv or conda env active in `environ`; {} when none is."""
    if not (environ.get("VIRTUAL_ENV") or environ.get("CONDA_PREFIX")) or not environ.get("PATH"):
        return {}
    return {name: environ[name] for name in CARRIED if environ.get(name)}


def with_python_env(spec: dict[str, Any], environ: Mapping[str, str], notes: list[str]) -> dict[str, Any]:
    """`spec` with the active env's variables added to its `env` (the spec's own values win), and a note
    saying so; `spec` as it is where it chooses its own environment or none is active."""
    env = dict(spec.get("env") or {})
    if spec.get("conda_env") or spec.get("docker_image") or "PATH" in env:
        return spec
    carried = active_python_env(environ)
    if not carried:
        return spec
    if "VIRTUAL_ENV" in carried:
        active = f"virtualenv {carried['VIRTUAL_ENV']}"
    else:
        active = f"conda env {carried.get('CONDA_DEFAULT_ENV') or carried['CONDA_PREFIX']}"
    notes.append(
        f"the job gets this shell's PATH: {active} is active here, so its `python` runs "
        "(--worker-env: the worker's PATH instead)"
    )
    return {**spec, "env": {**carried, **env}}
