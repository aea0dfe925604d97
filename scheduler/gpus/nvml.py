"""Real GPU readings through NVML (the `pynvml` module of the `nvidia-ml-py` package).

The module is passed in (`nvml=`), defaulting to `import pynvml`, so tests replay recorded NVML answers
without a driver (as httpx tests pass a `MockTransport`). Name, uuid and memory are required: without them a
GPU cannot be placed on, so their failure fails the read. Utilization, temperature and power are optional:
consumer cards, MIG slices and some virtual GPUs answer NVML_ERROR_NOT_SUPPORTED there, and one missing
sensor must not take a node's GPUs out of service, so such a reading becomes None. So does the list of
processes using a GPU, which tells memory held outside nightshift (a notebook) from its own tasks' memory.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from contextlib import suppress
from typing import Any, TypeVar

from scheduler.errors import GpuInventoryError
from scheduler.gpus.inventory import GpuInfo, GpuProcess, GpuSource

log = logging.getLogger(__name__)

BYTES_PER_MIB = 1024 * 1024
MILLIWATTS_PER_WATT = 1000.0

T = TypeVar("T")


def _import_pynvml() -> Any:
    try:
        import pynvml
    except ImportError as exc:  # pragma: no cover - nvidia-ml-py is a dependency of nightshift
        raise GpuInventoryError("pynvml is not installed: `pip install nvidia-ml-py`.") from exc
    return pynvml


def _text(value: str | bytes) -> str:
    """NVML strings: `str` from nvidia-ml-py >= 11.515, `bytes` from older versions."""
    return value.decode("utf-8", errors="replace") if isinstance(value, bytes) else str(value)


def _process(info: Any) -> GpuProcess:
    """One entry of `nvmlDeviceGetComputeRunningProcesses`; its memory is None when NVML has no figure."""
    used = getattr(info, "usedGpuMemory", None)
    return GpuProcess(int(info.pid), None if used is None else int(used) // BYTES_PER_MIB)


def nvml_available(nvml: Any = None) -> bool:
    """True only when NVML starts and reports at least one GPU; never raises (a probe, not a reader)."""
    try:
        module = nvml if nvml is not None else _import_pynvml()
    except GpuInventoryError:
        return False
    try:
        module.nvmlInit()
    except (module.NVMLError, OSError) as exc:
        log.debug("NVML is not available: %s", exc)
        return False
    try:
        return int(module.nvmlDeviceGetCount()) > 0
    except module.NVMLError as exc:
        log.debug("NVML started but could not count GPUs: %s", exc)
        return False
    finally:
        with suppress(module.NVMLError):
            module.nvmlShutdown()


class NvmlGpus:
    """The GPUs the NVIDIA driver reports; NVML is started once here and shut down by `close()`."""

    source: GpuSource = "nvml"

    def __init__(self, nvml: Any = None) -> None:
        """Start NVML (`pynvml` unless a stand-in is given); raises GpuInventoryError when it cannot start."""
        self._nvml = nvml if nvml is not None else _import_pynvml()
        self._lock = threading.Lock()
        self._closed = False
        try:
            self._nvml.nvmlInit()
        except self._nvml.NVMLError as exc:
            raise GpuInventoryError(
                f"NVML could not start ({exc}); is the NVIDIA driver installed and loaded?",
                nvml_error=getattr(exc, "value", None),
            ) from exc

    def read(self) -> list[GpuInfo]:
        """A fresh reading of every GPU. A GPU whose required readings fail (a lost GPU) is read as
        `GpuInfo.unreadable`, so the node goes on serving the others; GpuInventoryError when NVML cannot
        even count the GPUs."""
        with self._lock:
            if self._closed:
                raise GpuInventoryError("The NVML GPU monitor is closed.")
            count = self._required(None, "the device count", self._nvml.nvmlDeviceGetCount)
            return [self._read_device_or_fault(index) for index in range(int(count))]

    def _read_device_or_fault(self, index: int) -> GpuInfo:
        try:
            return self._read_device(index)
        except GpuInventoryError as exc:
            return GpuInfo.unreadable(index, exc.message)

    def close(self) -> None:
        """Shut NVML down once; later calls do nothing and later reads raise GpuInventoryError."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                self._nvml.nvmlShutdown()
            except self._nvml.NVMLError as exc:
                log.warning("NVML shutdown failed: %s", exc)

    def _read_device(self, index: int) -> GpuInfo:
        nvml = self._nvml
        handle = self._required(index, "the handle", nvml.nvmlDeviceGetHandleByIndex, index)
        name = _text(self._required(index, "the name", nvml.nvmlDeviceGetName, handle))
        uuid = _text(self._required(index, "the uuid", nvml.nvmlDeviceGetUUID, handle))
        memory = self._required(index, "the memory information", nvml.nvmlDeviceGetMemoryInfo, handle)
        utilization_pct = self._optional(index, lambda: float(nvml.nvmlDeviceGetUtilizationRates(handle).gpu))
        temperature_c = self._optional(
            index, lambda: float(nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU))
        )
        power_w = self._optional(index, lambda: nvml.nvmlDeviceGetPowerUsage(handle) / MILLIWATTS_PER_WATT)
        power_limit_w = self._optional(
            index, lambda: nvml.nvmlDeviceGetEnforcedPowerLimit(handle) / MILLIWATTS_PER_WATT
        )
        processes = self._optional(
            index, lambda: tuple(_process(p) for p in nvml.nvmlDeviceGetComputeRunningProcesses(handle))
        )
        return GpuInfo(
            index=index,
            uuid=uuid,
            name=name,
            memory_total_mib=int(memory.total) // BYTES_PER_MIB,
            memory_used_mib=int(memory.used) // BYTES_PER_MIB,
            memory_free_mib=int(memory.free) // BYTES_PER_MIB,
            utilization_pct=utilization_pct,
            temperature_c=temperature_c,
            power_w=power_w,
            power_limit_w=power_limit_w,
            processes=processes,
        )

    def _required(self, index: int | None, what: str, call: Callable[..., Any], *args: Any) -> Any:
        try:
            return call(*args)
        except self._nvml.NVMLError as exc:
            of_gpu = "" if index is None else f" of GPU {index}"
            raise GpuInventoryError(
                f"NVML could not read {what}{of_gpu}: {exc}.",
                index=index,
                nvml_error=getattr(exc, "value", None),
            ) from exc

    def _optional(self, index: int, call: Callable[[], T]) -> T | None:
        try:
            return call()
        except self._nvml.NVMLError as exc:
            log.debug("GPU %d: optional NVML reading unavailable: %s", index, exc)
            return None
