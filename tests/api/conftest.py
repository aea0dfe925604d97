"""Fixtures of the API tests: a TestClient over a real cluster (Redis + SQLite), tokens, a 4-GPU node."""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from api.main import create_app
from scheduler.dispatcher import Dispatcher
from scheduler.gpus import SimulatedGpus
from scheduler.service import Cluster
from scheduler.worker import Worker

with warnings.catch_warnings():
    # starlette warns at import when it finds `httpx` instead of `httpx2`; nothing a test can act on.
    warnings.filterwarnings("ignore", message=".*starlette.testclient.*")
    from fastapi.testclient import TestClient


def bearer(token: str) -> dict[str, str]:
    """The Authorization header for `token`."""
    return {"Authorization": f"Bearer {token}"}


def submitted_id(client: TestClient, headers: dict[str, str], **spec: Any) -> int:
    """POST /tasks of `spec` (a CPU-only `echo hi` where it says nothing else) as `headers`: the new id."""
    response = client.post("/api/v1/tasks", json={"command": "echo hi", "gpus": 0, **spec}, headers=headers)
    assert response.status_code == 201, response.text
    return int(response.json()["id"])


def task_of(client: TestClient, headers: dict[str, str], task_id: int) -> dict[str, Any]:
    """GET /tasks/{id} as `headers`."""
    task: dict[str, Any] = client.get(f"/api/v1/tasks/{task_id}", headers=headers).json()
    return task


@pytest.fixture
def client(cluster: Cluster) -> Iterator[TestClient]:
    """The API app over the test cluster."""
    with TestClient(create_app(cluster)) as test_client:
        yield test_client


@pytest.fixture
def alice(make_identity: Callable[..., Any]) -> dict[str, str]:
    """Headers of alice, a member of team vision."""
    _, token = make_identity("alice", "vision")
    return bearer(token)


@pytest.fixture
def four_gpu_node(cluster: Cluster) -> Worker:
    """A node with 4 simulated 24 GB GPUs, registered the way a worker registers it (no worker loop runs)."""
    worker = Worker(cluster, "node-a", SimulatedGpus("4x24", node="node-a"), base_env=dict(os.environ))
    worker.publish_node()
    return worker


@pytest.fixture
def running_cluster(cluster: Cluster, run_in_thread: Callable[[Callable[..., None]], Any]) -> Cluster:
    """The test cluster with a scheduler and a worker (4 simulated GPUs) running in threads."""
    worker = Worker(cluster, "node-a", SimulatedGpus("4x24", node="node-a"), base_env=dict(os.environ))
    worker.publish_node()
    run_in_thread(Dispatcher(cluster).run)
    run_in_thread(worker.run)
    return cluster
