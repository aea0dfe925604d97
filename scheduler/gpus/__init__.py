"""The GPU inventory: what GPUs a node has and how busy they are, from NVML or a simulation."""

from scheduler.gpus.detect import open_gpu_monitor
from scheduler.gpus.inventory import GpuInfo, GpuMonitor, GpuProcess, GpuSource, NoGpus
from scheduler.gpus.nvml import NvmlGpus, nvml_available
from scheduler.gpus.simulated import (
    DEFAULT_SIMULATED_GPU_GB,
    MAX_SIMULATED_GPUS,
    SimulatedGpus,
    SimulatedGpuType,
    parse_simulated_gpus,
)

__all__ = [
    "DEFAULT_SIMULATED_GPU_GB",
    "MAX_SIMULATED_GPUS",
    "GpuInfo",
    "GpuMonitor",
    "GpuProcess",
    "GpuSource",
    "NoGpus",
    "NvmlGpus",
    "SimulatedGpuType",
    "SimulatedGpus",
    "nvml_available",
    "open_gpu_monitor",
    "parse_simulated_gpus",
]
