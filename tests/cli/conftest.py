"""Fixtures of the CLI tests: a node with A100s, and `nightshift` run as a person against the real API."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import Result
from typer.testing import CliRunner

from api.cli.app import app
from scheduler.clock import now_ms
from scheduler.nodes import NodeGpu
from scheduler.service import Cluster
from scheduler.settings import get_settings
from tests.conftest import serve_api

GB = 1024


@pytest.fixture
def a100_node(cluster: Cluster) -> str:
    """Node `box-1` with four 80 GB A100s, registered as its worker would; its name."""
    gpus = [NodeGpu(i, "NVIDIA A100-SXM4-80GB", 80 * GB, 80 * GB) for i in range(4)]
    cluster.nodes.publish("box-1", gpus, now_ms(), "simulated")
    return "box-1"


@contextmanager
def cli_as(
    cluster: Cluster, token: str, monkeypatch: pytest.MonkeyPatch, home: Path
) -> Iterator[Callable[..., Result]]:
    """`nightshift ARGS...` run in-process with `token`, against `cluster`'s API served on a free port."""
    monkeypatch.setenv("NIGHTSHIFT_TOKEN", token)
    monkeypatch.setenv("NIGHTSHIFT_HOME", str(home))
    with serve_api(cluster) as url:
        monkeypatch.setenv("NIGHTSHIFT_API_URL", url)
        get_settings.cache_clear()
        try:
            yield lambda *args: CliRunner().invoke(app, list(args))
        finally:
            get_settings.cache_clear()


def lr_sweep_file(folder: Path, rates: str) -> Path:
    """A spec file of a one-GPU sweep over these learning rates (`rates`: a YAML list, e.g. `[0.1, 0.01]`)."""
    spec = folder / "sweep.yaml"
    spec.write_text(f"command: python train.py --lr {{lr}}\ngpus: 1\nsweep:\n  lr: {rates}\n")
    return spec
