"""Read the real GPUs through `NvmlGpus`, print the readings as JSON, and record NVML's raw answers.

Run on a machine with an NVIDIA driver:  python scripts/device_nvml_check.py [OUT.json]
The recording (default `nvml-recording-<host>.json`) has the format of `tests/gpus/recorded/*.json`: copy it
there to make a test fixture from a real machine. Every pynvml call the adapter makes passes through a
recorder, so the fixture holds exactly what the adapter asked; the script then replays it through the same
adapter and checks the result matches the live reading. Exit status: 0 read and matched, 1 otherwise.
"""

from __future__ import annotations

import json
import socket
import sys
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pynvml  # noqa: E402

from scheduler.errors import GpuInventoryError  # noqa: E402
from scheduler.gpus import NvmlGpus  # noqa: E402

ERROR_NAMES = {
    getattr(pynvml, n): n for n in sorted(dir(pynvml), reverse=True) if n.startswith("NVML_ERROR_")
}
TOP_LEVEL = {"nvmlInit", "nvmlSystemGetDriverVersion", "nvmlDeviceGetCount"}


def encode(value: Any) -> Any:
    """A pynvml answer as JSON: bytes as {"bytes": ...}, ctypes structs as objects of their fields."""
    if isinstance(value, bytes):
        return {"bytes": value.decode("utf-8", errors="replace")}
    if isinstance(value, list):
        return [encode(item) for item in value]
    if hasattr(type(value), "_fields_"):
        return {field[0]: encode(getattr(value, field[0])) for field in type(value)._fields_}
    if isinstance(value, pynvml.nvmlFriendlyObject):  # the entries of a process list
        return {name: encode(item) for name, item in vars(value).items() if not name.startswith("_")}
    return value


class RecordingNvml:
    """Passes every `nvml*` call to pynvml and keeps its answer (or its error) in the recording format."""

    def __init__(self) -> None:
        """Start an empty recording of this host."""
        host = socket.gethostname()
        self.recording: dict[str, Any] = {
            "format": "nightshift-nvml-recording/1",
            "description": f"Recorded on {host} at {datetime.now(UTC).isoformat(timespec='seconds')}.",
            "recorded_by": "scripts/device_nvml_check.py",
            "pynvml_version": metadata.version("nvidia-ml-py"),
            "devices": [],
        }
        self._handle_index: dict[int, int] = {}
        self._handles: list[Any] = []  # kept alive so their ids stay unique

    def __getattr__(self, name: str) -> Any:
        attr = getattr(pynvml, name)
        if not (callable(attr) and name.startswith("nvml")) or isinstance(attr, type):
            return attr

        def call(*args: Any) -> Any:
            try:
                result = attr(*args)
            except pynvml.NVMLError as exc:
                self._keep(name, args, {"nvml_error": ERROR_NAMES.get(exc.value, "NVML_ERROR_UNKNOWN")})
                raise
            if name == "nvmlDeviceGetHandleByIndex":
                self._handles.append(result)
                self._handle_index[id(result)] = args[0]
            self._keep(name, args, encode(result))
            return result

        return call

    def _keep(self, name: str, args: tuple[Any, ...], value: Any) -> None:
        if name in TOP_LEVEL:
            self.recording[name] = value
            return
        if name == "nvmlShutdown":
            return
        index = args[0] if name == "nvmlDeviceGetHandleByIndex" else self._handle_index[id(args[0])]
        devices = self.recording["devices"]
        while len(devices) <= index:
            devices.append({})
        # a successful handle is not kept (replay makes its own); a failed one is, as its error
        if name != "nvmlDeviceGetHandleByIndex" or isinstance(value, dict):
            devices[index][name] = value


def main() -> int:
    """Read, print, record, replay-check; see the module docstring."""
    out = Path(sys.argv[1] if len(sys.argv) > 1 else f"nvml-recording-{socket.gethostname()}.json")
    recorder = RecordingNvml()
    status = 1
    try:
        gpus = NvmlGpus(nvml=recorder)
        recorder.nvmlSystemGetDriverVersion()
        try:
            readings = [g.to_dict() for g in gpus.read()]
        finally:
            gpus.close()
        sys.stdout.write(json.dumps({"source": gpus.source, "gpus": readings}, indent=2) + "\n")
        status = 0 if readings else 1
    except GpuInventoryError as exc:
        sys.stdout.write(json.dumps({"error": exc.message, "details": exc.details}) + "\n")
    out.write_text(json.dumps(recorder.recording, indent=2) + "\n")
    sys.stdout.write(f"recording written to {out}\n")
    if status == 0:
        from tests.gpus.nvml_replay import ReplayNvml

        replayed = [g.to_dict() for g in NvmlGpus(nvml=ReplayNvml(recorder.recording)).read()]
        status = 0 if replayed == readings else 1
        sys.stdout.write(f"replay of the recording matches the live reading: {replayed == readings}\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
