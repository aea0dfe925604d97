"""The host's own readings (CPU, memory, disk use) through psutil."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import psutil


@dataclass(frozen=True, slots=True)
class HostReading:
    """CPU, memory and disk use of a worker's machine, in percent."""

    cpu_pct: float
    memory_pct: float
    disk_pct: float


def read_host(disk_path: Path | str = "/") -> HostReading:
    """A fresh reading; CPU is the use since the previous call (the first, since the process started)."""
    return HostReading(
        cpu_pct=float(psutil.cpu_percent(interval=None)),
        memory_pct=float(psutil.virtual_memory().percent),
        disk_pct=float(psutil.disk_usage(str(disk_path)).percent),
    )
