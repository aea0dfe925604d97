"""The memory each GPU's driver holds for itself, learned from the GPU's readings.

A GPU shows more memory in use than its processes hold: 615 MiB of an idle H200 with none, 623 MiB beyond
a notebook's 100 GiB on another (tests/gpus/recorded/h200_*.json). No task can have that memory, so a task
sharing the GPU is charged its fraction of the rest (`GpuSlot.shareable_mib`): two halves of the GPU then
both fit, where halves of the total did not.
"""

from __future__ import annotations

from collections.abc import Collection

from scheduler.gpus.inventory import GpuInfo


class DriverReserve:
    """Per GPU index, the memory in use beyond its processes' at the last reading that could tell; 0 until
    one could."""

    def __init__(self) -> None:
        self._mib: dict[int, int] = {}

    def observe(self, gpu: GpuInfo, held_by_jobs: Collection[int]) -> int:
        """Learn from one reading and return the GPU's reserve.

        A reading tells when the driver lists the GPU's processes with their memory and no job of this
        worker holds the GPU: in a container the driver may leave a job's processes out, and their memory
        would then pass for the driver's.
        """
        processes = gpu.processes
        if processes is not None and gpu.index not in held_by_jobs:
            listed = [p.used_mib for p in processes]
            if all(mib is not None for mib in listed):
                in_use = min(gpu.memory_used_mib, gpu.memory_total_mib)
                self._mib[gpu.index] = max(0, in_use - sum(mib or 0 for mib in listed))
        return self._mib.get(gpu.index, 0)
