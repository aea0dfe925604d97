"""Fixtures for the GPU inventory tests: recorded NVML answers, replayed."""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest

from .nvml_replay import ReplayNvml


@pytest.fixture
def recorded_nvml() -> Callable[[str], ReplayNvml]:
    """Factory: `recorded_nvml("a100_sxm4_80gb_x8")` -> a pynvml stand-in answering from that recording."""
    return ReplayNvml.load


@pytest.fixture
def start_worker_on(cluster, run_in_thread):
    """Factory: the scheduler and a worker reading `monitor`, in threads; the worker."""
    from scheduler.dispatcher import Dispatcher
    from scheduler.worker import Worker

    def start(monitor):
        worker = Worker(cluster, "gpu-box", monitor, base_env=dict(os.environ))
        worker.publish_node()
        run_in_thread(Dispatcher(cluster).run)
        run_in_thread(worker.run)
        return worker

    return start
