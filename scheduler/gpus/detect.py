"""Choose where a node's GPU readings come from, once, when a worker or the API starts.

The order is deliberate:
1. A simulate spec (`NIGHTSHIFT_SIMULATE_GPUS`) wins, even on a machine with NVIDIA GPUs, so a developer can
   rehearse a 2x80 GB placement on a laptop, and a test never depends on the machine it runs on.
2. Otherwise NVML, when the driver starts and reports at least one GPU.
3. Otherwise no GPUs (`source="none"`): a CPU-only node is normal (it runs `gpus: 0` tasks), not an error,
   so a missing driver is logged and the node still starts.
"""

from __future__ import annotations

import logging
from typing import Any

from scheduler.errors import GpuInventoryError
from scheduler.gpus.inventory import GpuMonitor, NoGpus
from scheduler.gpus.nvml import NvmlGpus
from scheduler.gpus.simulated import SimulatedGpus

log = logging.getLogger(__name__)


def open_gpu_monitor(simulate: str | None, node: str, *, nvml: Any = None) -> GpuMonitor:
    """Simulated GPUs if `simulate` is set, else NVML if it sees GPUs, else none; see the module docstring."""
    if simulate is not None and simulate.strip():
        monitor = SimulatedGpus(simulate, node=node)  # a bad spec raises: the setting must be fixed
        log.info("GPUs on %s: simulated %s (%d GPUs)", node, simulate.strip(), len(monitor.gpu_types))
        return monitor
    try:
        nvml_monitor = NvmlGpus(nvml=nvml)
    except GpuInventoryError as exc:
        log.info("GPUs on %s: none (%s)", node, exc.message)
        return NoGpus()
    try:
        readings = nvml_monitor.read()
    except GpuInventoryError as exc:
        log.warning(
            "GPUs on %s: NVML started but could not read the GPUs (%s); using none", node, exc.message
        )
        nvml_monitor.close()
        return NoGpus()
    if not readings:
        log.info("GPUs on %s: none (NVML reports no devices)", node)
        nvml_monitor.close()
        return NoGpus()
    log.info("GPUs on %s: %d from NVML", node, len(readings))
    for gpu in readings:
        if gpu.fault is not None:  # served around: out of service until it reads again
            log.warning("GPU %s:%d takes no tasks: %s", node, gpu.index, gpu.fault)
    return nvml_monitor
