"""What the service tests share: a scheduler and a worker running in threads over the test's cluster."""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest

from scheduler.dispatcher import Dispatcher
from scheduler.gpus import SimulatedGpus
from scheduler.service import Cluster
from scheduler.worker import Worker

StartWorker = Callable[..., Worker]


@pytest.fixture
def start_worker(cluster: Cluster, run_in_thread: Callable) -> StartWorker:
    """Factory: start the scheduler and a worker of simulated GPUs (`gpus`, e.g. "2x24") on `node` in
    threads, stopped after the test; the worker."""

    def start(gpus: str = "2x24", node: str = "node-a", on: Cluster | None = None) -> Worker:
        target = on or cluster
        worker = Worker(target, node, SimulatedGpus(gpus, node=node), base_env=dict(os.environ))
        worker.publish_node()
        run_in_thread(Dispatcher(target).run)
        run_in_thread(worker.run)
        return worker

    return start
