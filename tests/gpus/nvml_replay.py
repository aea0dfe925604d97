"""Replay of recorded NVML answers: a stand-in for the `pynvml` module, built from a JSON recording.

Recording format (`"format": "nightshift-nvml-recording/1"`, written by `scripts/device_nvml_check.py`):
top-level keys `nvmlInit`, `nvmlSystemGetDriverVersion`, `nvmlDeviceGetCount`, and `devices`, a list with one
object per GPU whose keys are the per-device pynvml functions the adapter calls (`nvmlDeviceGetName`,
`nvmlDeviceGetUUID`, `nvmlDeviceGetMemoryInfo`, `nvmlDeviceGetUtilizationRates`, `nvmlDeviceGetTemperature`
(sensor NVML_TEMPERATURE_GPU), `nvmlDeviceGetPowerUsage` (mW), `nvmlDeviceGetEnforcedPowerLimit` (mW),
`nvmlDeviceGetComputeRunningProcesses` (a list of {pid, usedGpuMemory (bytes)}; recordings made before the
adapter asked for it lack it, and the replay answers NVML_ERROR_NOT_SUPPORTED), and optionally
`nvmlDeviceGetHandleByIndex`). Each value is what the call returned, with three encodings:
`{"nvml_error": "NVML_ERROR_NOT_SUPPORTED"}` means the call raised that error, `{"bytes": "text"}` means
it returned `b"text"` (pynvml < 11.515), and any other object is a ctypes struct, read by attribute.

Like the real library, every call before `nvmlInit` (or after the matching `nvmlShutdown`) raises
NVML_ERROR_UNINITIALIZED, and the errors raised are pynvml's own `NVMLError` subclasses.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pynvml

RECORDED = Path(__file__).parent / "recorded"
RECORDING_FORMAT = "nightshift-nvml-recording/1"


def nvml_error(name: str) -> pynvml.NVMLError:
    """The pynvml exception for `NVML_ERROR_<NAME>`, e.g. NVMLError_NotSupported for NOT_SUPPORTED."""
    return pynvml.NVMLError(getattr(pynvml, name))


def decode(value: Any) -> Any:
    """Turn a recorded value back into what pynvml returned, raising the recorded error if it is one."""
    if isinstance(value, list):
        return [decode(item) for item in value]
    if isinstance(value, dict):
        if set(value) == {"nvml_error"}:
            raise nvml_error(value["nvml_error"])
        if set(value) == {"bytes"}:
            return value["bytes"].encode("utf-8")
        return SimpleNamespace(**value)
    return value


@dataclass(frozen=True)
class ReplayHandle:
    """What `nvmlDeviceGetHandleByIndex` returns: an opaque handle naming the device index."""

    index: int


class ReplayNvml:
    """Implements the pynvml functions `NvmlGpus` calls, answering from a recording; logs every call."""

    NVMLError = pynvml.NVMLError
    NVML_TEMPERATURE_GPU = pynvml.NVML_TEMPERATURE_GPU

    def __init__(self, recording: dict[str, Any]) -> None:
        assert recording.get("format") == RECORDING_FORMAT, recording.get("format")
        self.recording = recording
        self.init_depth = 0
        self.calls: list[str] = []

    @classmethod
    def load(cls, name: str) -> ReplayNvml:
        """Replay `tests/gpus/recorded/<name>.json`."""
        return cls(json.loads((RECORDED / f"{name}.json").read_text()))

    def _answer(self, function: str, value: Any) -> Any:
        self.calls.append(function)
        if self.init_depth == 0:
            raise nvml_error("NVML_ERROR_UNINITIALIZED")
        return decode(value)

    def _device(self, function: str, handle: ReplayHandle) -> Any:
        # a call the recording lacks (made before the adapter asked for it) answers as an old driver would
        missing = {"nvml_error": "NVML_ERROR_NOT_SUPPORTED"}
        return self._answer(function, self.recording["devices"][handle.index].get(function, missing))

    def nvmlInit(self) -> None:
        self.calls.append("nvmlInit")
        decode(self.recording["nvmlInit"])
        self.init_depth += 1  # NVML counts inits: each needs its own shutdown

    def nvmlShutdown(self) -> None:
        self._answer("nvmlShutdown", None)
        self.init_depth -= 1

    def nvmlSystemGetDriverVersion(self) -> Any:
        return self._answer("nvmlSystemGetDriverVersion", self.recording["nvmlSystemGetDriverVersion"])

    def nvmlDeviceGetCount(self) -> Any:
        return self._answer("nvmlDeviceGetCount", self.recording["nvmlDeviceGetCount"])

    def nvmlDeviceGetHandleByIndex(self, index: int) -> ReplayHandle:
        devices = self.recording["devices"]
        if not 0 <= index < len(devices):
            self._answer("nvmlDeviceGetHandleByIndex", None)
            raise nvml_error("NVML_ERROR_INVALID_ARGUMENT")
        self._answer("nvmlDeviceGetHandleByIndex", devices[index].get("nvmlDeviceGetHandleByIndex"))
        return ReplayHandle(index)

    def nvmlDeviceGetName(self, handle: ReplayHandle) -> Any:
        return self._device("nvmlDeviceGetName", handle)

    def nvmlDeviceGetUUID(self, handle: ReplayHandle) -> Any:
        return self._device("nvmlDeviceGetUUID", handle)

    def nvmlDeviceGetMemoryInfo(self, handle: ReplayHandle) -> Any:
        return self._device("nvmlDeviceGetMemoryInfo", handle)

    def nvmlDeviceGetUtilizationRates(self, handle: ReplayHandle) -> Any:
        return self._device("nvmlDeviceGetUtilizationRates", handle)

    def nvmlDeviceGetTemperature(self, handle: ReplayHandle, sensor: int) -> Any:
        if sensor != pynvml.NVML_TEMPERATURE_GPU:
            raise nvml_error("NVML_ERROR_INVALID_ARGUMENT")  # only the GPU core sensor is recorded
        return self._device("nvmlDeviceGetTemperature", handle)

    def nvmlDeviceGetPowerUsage(self, handle: ReplayHandle) -> Any:
        return self._device("nvmlDeviceGetPowerUsage", handle)

    def nvmlDeviceGetEnforcedPowerLimit(self, handle: ReplayHandle) -> Any:
        return self._device("nvmlDeviceGetEnforcedPowerLimit", handle)

    def nvmlDeviceGetComputeRunningProcesses(self, handle: ReplayHandle) -> Any:
        return self._device("nvmlDeviceGetComputeRunningProcesses", handle)
