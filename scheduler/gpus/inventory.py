"""What one GPU looks like to nightshift, and the seam every GPU source implements.

`GpuInfo` is one reading of one GPU, in plain units (MiB, %, °C, W). `GpuMonitor` is the Protocol the
worker and the API read through; the real implementation (`NvmlGpus`), the simulated one (`SimulatedGpus`)
and the CPU-only one (`NoGpus`) sit beside each other so tests and the simulator never need a driver.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal, Protocol, runtime_checkable

GpuSource = Literal["nvml", "simulated", "none"]


@dataclass(frozen=True, slots=True)
class GpuProcess:
    """A process using a GPU, as the driver lists it: its pid (in the driver's pid namespace) and the GPU
    memory it holds (None where the driver does not say, e.g. under some virtual GPUs)."""

    pid: int
    used_mib: int | None = None


@dataclass(frozen=True, slots=True)
class GpuInfo:
    """One reading of one GPU; optional readings are None where the device cannot report them
    (`processes`: None where the source cannot list them, as simulated GPUs cannot). `fault`: why the
    driver could not read this GPU (a lost GPU), which then has no memory to offer; the others still read."""

    index: int
    uuid: str
    name: str
    memory_total_mib: int
    memory_used_mib: int
    memory_free_mib: int
    utilization_pct: float | None = None
    temperature_c: float | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    processes: tuple[GpuProcess, ...] | None = None
    fault: str | None = None

    @classmethod
    def unreadable(cls, index: int, fault: str) -> GpuInfo:
        """The reading of a GPU the driver could not read, saying why: nothing on it can be known or used."""
        return cls(index=index, uuid="", name="unreadable GPU", memory_total_mib=0, memory_used_mib=0,
                   memory_free_mib=0, fault=fault)  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready mapping, field names as in the dataclass (for `GET /gpus` and heartbeats)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GpuInfo:
        """Inverse of `to_dict`, so a worker's heartbeat can be read back on the scheduler's side."""
        return cls(
            index=int(data["index"]),
            uuid=str(data["uuid"]),
            name=str(data["name"]),
            memory_total_mib=int(data["memory_total_mib"]),
            memory_used_mib=int(data["memory_used_mib"]),
            memory_free_mib=int(data["memory_free_mib"]),
            utilization_pct=_optional_float(data.get("utilization_pct")),
            temperature_c=_optional_float(data.get("temperature_c")),
            power_w=_optional_float(data.get("power_w")),
            power_limit_w=_optional_float(data.get("power_limit_w")),
            processes=_processes(data.get("processes")),
            fault=None if data.get("fault") is None else str(data["fault"]),
        )


def _processes(value: Any) -> tuple[GpuProcess, ...] | None:
    if value is None:
        return None
    return tuple(
        GpuProcess(int(item["pid"]), None if item.get("used_mib") is None else int(item["used_mib"]))
        for item in value
    )


def _optional_float(value: Any) -> float | None:
    return None if value is None else float(value)


@runtime_checkable
class GpuMonitor(Protocol):
    """Where a node's GPU readings come from; `read()` is called by a worker thread, `close()` once."""

    @property
    def source(self) -> GpuSource:
        """`"nvml"` (real driver), `"simulated"` (NIGHTSHIFT_SIMULATE_GPUS) or `"none"` (CPU-only node)."""
        ...

    def read(self) -> list[GpuInfo]:
        """A fresh reading of every GPU, ordered by index; raises GpuInventoryError when unreadable."""
        ...

    def close(self) -> None:
        """Release the driver or other resources; safe to call more than once."""
        ...


class NoGpus:
    """The monitor of a CPU-only node: no GPUs, so only `gpus: 0` tasks are placed there."""

    source: GpuSource = "none"

    def read(self) -> list[GpuInfo]:
        """Always an empty list: there is nothing to read."""
        return []

    def close(self) -> None:
        """Nothing to release."""
