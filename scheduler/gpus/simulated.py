"""Simulated GPUs for machines without NVIDIA GPUs, for tests, and for `nightshift simulate`.

A spec such as `4x24` or `2x80,2x24` (the value of `NIGHTSHIFT_SIMULATE_GPUS`, or of `simulate --gpus`)
lists parts `COUNTxGB`, separated by commas: COUNT GPUs with GB gigabytes each. GB may have a fraction
(`1x40.5`) and may end in `GB` (`4x24GB`). A bare `COUNT` (`8`) means COUNT GPUs of 24 GB, the most common
card size on the desks this tool is for. One GB here is 1024 MiB, as NVML counts it (an "80GB" A100 reports
81920 MiB), so a simulated `80` matches a real 80 GB card.

`SimulatedGpus` reads as idle GPUs until a test scripts other readings with `set_reading`; every method
takes one lock, because the worker's thread reads while a test's thread scripts.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NoReturn

from scheduler.errors import GpuInventoryError
from scheduler.gpus.inventory import GpuInfo, GpuSource

MIB_PER_GB = 1024
DEFAULT_SIMULATED_GPU_GB = 24.0
MAX_SIMULATED_GPUS = 64
MAX_SIMULATED_GPU_GB = 1024.0
IDLE_TEMPERATURE_C = 35.0
IDLE_POWER_FRACTION = 0.15
EXPECTED_FORM = (
    "COUNTxGB parts separated by commas, e.g. 4x24 or 2x80,2x24 "
    f"(a bare COUNT means COUNT GPUs of {DEFAULT_SIMULATED_GPU_GB:g} GB; at most {MAX_SIMULATED_GPUS} GPUs)"
)

# Rough board power (TDP) by memory size, after common cards of each size (RTX 4080/V100 16 GB, RTX 3090/4090
# 24 GB, A6000/L40S 48 GB, A100 80 GB, H100/H200 above). Only energy estimates use it.
_TDP_BY_MEMORY_GB: tuple[tuple[float, float], ...] = ((16, 250.0), (24, 350.0), (48, 300.0), (80, 400.0))
_TDP_ABOVE_80_GB_W = 700.0

_COUNT = re.compile(r"\d+")
_GB = re.compile(r"(\d+(?:\.\d*)?|\.\d+)\s*(?:gb)?", re.IGNORECASE)
_TIMES = re.compile(r"[xX×]")


@dataclass(frozen=True, slots=True)
class SimulatedGpuType:
    """The size of one simulated GPU, with the name and power figures derived from it."""

    memory_gb: float

    @property
    def memory_total_mib(self) -> int:
        """Total memory in MiB (1 GB = 1024 MiB, as NVML reports real cards)."""
        return round(self.memory_gb * MIB_PER_GB)

    @property
    def name(self) -> str:
        """Display name, e.g. "Simulated GPU 80GB", so `nightshift gpus` shows it is not real."""
        return f"Simulated GPU {self.memory_gb:g}GB"

    @property
    def tdp_w(self) -> float:
        """Typical board power of a real card of this memory size; used as the power limit."""
        for up_to_gb, tdp_w in _TDP_BY_MEMORY_GB:
            if self.memory_gb <= up_to_gb:
                return tdp_w
        return _TDP_ABOVE_80_GB_W

    @property
    def idle_power_w(self) -> float:
        """Power drawn while idle: 15% of the TDP, about what an idle datacenter card reports."""
        return round(self.tdp_w * IDLE_POWER_FRACTION, 1)


def parse_simulated_gpus(spec: str) -> list[SimulatedGpuType]:
    """`"2x80,1x24"` -> one `SimulatedGpuType` per GPU, in order; raises GpuInventoryError on bad input."""
    if not spec or not spec.strip():
        raise GpuInventoryError(f"The simulated GPU spec is empty. Expected {EXPECTED_FORM}.", spec=spec)
    gpus: list[SimulatedGpuType] = []
    for position, part in enumerate(spec.split(","), start=1):
        count, memory_gb = _parse_part(spec, part, position)
        if len(gpus) + count > MAX_SIMULATED_GPUS:  # checked before building: `99999999x24` stays cheap
            raise GpuInventoryError(
                f"The simulated GPU spec {spec.strip()!r} asks for more than {MAX_SIMULATED_GPUS} GPUs "
                f"(at {part.strip()!r}). Expected {EXPECTED_FORM}.",
                spec=spec,
                part=part,
            )
        gpus.extend(SimulatedGpuType(memory_gb) for _ in range(count))
    return gpus


def _parse_part(spec: str, part: str, position: int) -> tuple[int, float]:
    text = part.strip()
    if not text:
        _fail(spec, part, f"part {position} is empty (check for a stray comma)")
    pieces = _TIMES.split(text)
    if len(pieces) > 2:
        _fail(spec, part, "it has more than one 'x'")
    count = _parse_count(spec, part, pieces[0].strip())
    memory_gb = DEFAULT_SIMULATED_GPU_GB if len(pieces) == 1 else _parse_gb(spec, part, pieces[1].strip())
    return count, memory_gb


def _parse_count(spec: str, part: str, text: str) -> int:
    if not text:
        _fail(spec, part, "the GPU count before 'x' is missing")
    if text.startswith("-") and _COUNT.fullmatch(text[1:]):
        _fail(spec, part, f"the GPU count {text} is negative; it must be at least 1")
    if not _COUNT.fullmatch(text):
        _fail(spec, part, f"the GPU count {text!r} is not a whole number")
    count = int(text)
    if count < 1:
        _fail(spec, part, "the GPU count must be at least 1")
    return count


def _parse_gb(spec: str, part: str, text: str) -> float:
    if not text:
        _fail(spec, part, "the GB per GPU after 'x' is missing")
    if text.startswith("-"):
        _fail(spec, part, f"the GB per GPU {text} is negative; it must be more than 0")
    match = _GB.fullmatch(text)
    if match is None:
        _fail(spec, part, f"the GB per GPU {text!r} is not a number")
    memory_gb = float(match.group(1))
    if not math.isfinite(memory_gb) or memory_gb <= 0:
        _fail(spec, part, "the GB per GPU must be more than 0")
    if memory_gb > MAX_SIMULATED_GPU_GB:
        _fail(spec, part, f"{memory_gb:g} GB per GPU is more than {MAX_SIMULATED_GPU_GB:g} GB")
    return memory_gb


def _fail(spec: str, part: str, problem: str) -> NoReturn:
    raise GpuInventoryError(
        f"Bad part {part.strip()!r} in the simulated GPU spec {spec.strip()!r}: {problem}. "
        f"Expected {EXPECTED_FORM}.",
        spec=spec,
        part=part,
    )


@dataclass(slots=True)
class _Reading:
    memory_used_mib: int
    utilization_pct: float
    temperature_c: float
    power_w: float


class SimulatedGpus:
    """GPUs that exist only in memory: idle unless scripted with `set_reading`; thread-safe."""

    source: GpuSource = "simulated"

    def __init__(self, spec: str | Sequence[SimulatedGpuType], node: str | None = None) -> None:
        """Build from a spec string (`"2x80,2x24"`) or parsed types; `node` makes uuids unique per node."""
        self.gpu_types: tuple[SimulatedGpuType, ...] = tuple(
            parse_simulated_gpus(spec) if isinstance(spec, str) else spec
        )
        self.node = node
        self._lock = threading.Lock()
        self._closed = False
        self._failure: str | None = None
        self._lost: dict[int, str] = {}  # GPU index -> the driver's words for a GPU it has lost
        self._readings = [
            _Reading(
                memory_used_mib=0,
                utilization_pct=0.0,
                temperature_c=IDLE_TEMPERATURE_C,
                power_w=t.idle_power_w,
            )
            for t in self.gpu_types
        ]

    def uuid(self, index: int) -> str:
        """Stable id of GPU `index`: `SIM-<node>-<index>`, or `SIM-<index>` without a node."""
        return f"SIM-{self.node}-{index}" if self.node else f"SIM-{index}"

    def read(self) -> list[GpuInfo]:
        """The current (scripted or idle) reading of every simulated GPU."""
        with self._lock:
            if self._closed:
                raise GpuInventoryError("The simulated GPU monitor is closed.")
            if self._failure is not None:
                raise GpuInventoryError(self._failure)
            lost = self._lost
            return [
                GpuInfo.unreadable(index, lost[index]) if index in lost else self._info(index, kind, reading)
                for index, (kind, reading) in enumerate(self._pairs())
            ]

    def set_reading(
        self,
        index: int,
        *,
        memory_used_mib: int | None = None,
        utilization_pct: float | None = None,
        temperature_c: float | None = None,
        power_w: float | None = None,
    ) -> None:
        """Script what GPU `index` reports from now on; arguments left as None keep their current value."""
        with self._lock:
            if not 0 <= index < len(self._readings):
                raise GpuInventoryError(
                    f"No simulated GPU {index}: this monitor has {len(self._readings)} (indexes from 0).",
                    index=index,
                )
            reading = self._readings[index]
            total_mib = self.gpu_types[index].memory_total_mib
            if memory_used_mib is not None:
                if not 0 <= memory_used_mib <= total_mib:
                    raise GpuInventoryError(
                        f"memory_used_mib={memory_used_mib} is outside 0..{total_mib} "
                        f"for simulated GPU {index}.",
                        index=index,
                    )
                reading.memory_used_mib = memory_used_mib
            if utilization_pct is not None:
                if not 0 <= utilization_pct <= 100:
                    raise GpuInventoryError(
                        f"utilization_pct={utilization_pct} is outside 0..100 for simulated GPU {index}.",
                        index=index,
                    )
                reading.utilization_pct = float(utilization_pct)
            if temperature_c is not None:
                reading.temperature_c = float(temperature_c)
            if power_w is not None:
                reading.power_w = float(power_w)

    def set_lost(self, index: int, message: str | None) -> None:
        """Make GPU `index` read as unreadable with `message` (a GPU fallen off the bus, as NVML says it)
        until called with None; the other GPUs read as before."""
        with self._lock:
            if message is None:
                self._lost.pop(index, None)
            else:
                self._lost[index] = message

    def set_failure(self, message: str | None) -> None:
        """Make every `read()` raise GpuInventoryError(message) until called with None (a lost driver)."""
        with self._lock:
            self._failure = message

    def close(self) -> None:
        """Mark the monitor closed; later reads raise GpuInventoryError, as a shut-down NVML would."""
        with self._lock:
            self._closed = True

    def _pairs(self) -> list[tuple[SimulatedGpuType, _Reading]]:
        return list(zip(self.gpu_types, self._readings, strict=True))

    def _info(self, index: int, gpu_type: SimulatedGpuType, reading: _Reading) -> GpuInfo:
        total_mib = gpu_type.memory_total_mib
        return GpuInfo(
            index=index,
            uuid=self.uuid(index),
            name=gpu_type.name,
            memory_total_mib=total_mib,
            memory_used_mib=reading.memory_used_mib,
            memory_free_mib=total_mib - reading.memory_used_mib,
            utilization_pct=reading.utilization_pct,
            temperature_c=reading.temperature_c,
            power_w=reading.power_w,
            power_limit_w=gpu_type.tdp_w,
        )
