"""The NVML adapter, against recorded NVML answers replayed through pynvml's own error classes."""

from __future__ import annotations

import ctypes.util
from collections.abc import Callable
from pathlib import Path

import pynvml
import pytest

from scheduler.errors import GpuInventoryError
from scheduler.gpus import GpuInfo, GpuProcess, NvmlGpus, nvml_available

from .nvml_replay import RECORDED, ReplayNvml, decode, nvml_error

Recorded = Callable[[str], ReplayNvml]


def has_nvidia_driver() -> bool:
    return Path("/proc/driver/nvidia").exists() or ctypes.util.find_library("nvidia-ml") is not None


def test_an_8_gpu_a100_box_is_read_with_memory_in_mib_and_power_in_watts(recorded_nvml: Recorded) -> None:
    gpus = NvmlGpus(nvml=recorded_nvml("a100_sxm4_80gb_x8"))

    readings = gpus.read()

    assert [g.index for g in readings] == list(range(8))
    assert {g.name for g in readings} == {"NVIDIA A100-SXM4-80GB"}
    assert len({g.uuid for g in readings}) == 8
    assert all(g.uuid.startswith("GPU-") for g in readings)
    assert readings[0] == GpuInfo(
        index=0,
        uuid="GPU-3f2a8c1e-5b7d-4e90-a1c2-7d8e9f0a1b2c",
        name="NVIDIA A100-SXM4-80GB",
        memory_total_mib=81920,
        memory_used_mib=80183,  # 80183.5 MiB used, rounded down
        memory_free_mib=1736,  # 1736.5 MiB free, rounded down
        utilization_pct=99.0,
        temperature_c=67.0,
        power_w=398.412,
        power_limit_w=400.0,
        processes=(GpuProcess(48211, 79872),),
    )


def test_the_a100_box_shows_its_mixed_usage(recorded_nvml: Recorded) -> None:
    readings = NvmlGpus(nvml=recorded_nvml("a100_sxm4_80gb_x8")).read()

    assert [g.utilization_pct for g in readings] == [99.0, 100.0, 97.0, 98.0, 46.0, 44.0, 0.0, 0.0]
    assert [g.memory_used_mib for g in readings][4:] == [23552, 23544, 589, 40960]
    assert readings[6].memory_free_mib == 81920 - 589
    assert readings[1].power_w is not None and readings[1].power_w > readings[1].power_limit_w  # type: ignore[operator]


def test_the_processes_on_each_gpu_are_read_with_their_memory_in_mib(recorded_nvml: Recorded) -> None:
    readings = NvmlGpus(nvml=recorded_nvml("a100_sxm4_80gb_x8")).read()

    assert readings[7].processes == (GpuProcess(31337, 40960),)  # the 40 GiB held with no work
    assert readings[0].processes == (GpuProcess(48211, 79872),)
    assert readings[6].processes == ()  # idle: none
    # a driver with no figure for a process's memory (NVML_VALUE_NOT_AVAILABLE: pynvml gives None)
    replay = recorded_nvml("a100_sxm4_80gb_x8")
    replay.recording["devices"][7]["nvmlDeviceGetComputeRunningProcesses"] = [
        {"pid": 31337, "usedGpuMemory": None}
    ]
    assert NvmlGpus(nvml=replay).read()[7].processes == (GpuProcess(31337, None),)
    # a recording made before the adapter asked: as a driver without the call, the list is unknown
    assert NvmlGpus(nvml=recorded_nvml("h200_idle")).read()[0].processes is None


def test_a_power_reading_that_is_not_supported_becomes_none_and_the_rest_is_read(
    recorded_nvml: Recorded,
) -> None:
    busy, idle = NvmlGpus(nvml=recorded_nvml("rtx4090_x2_power_not_supported")).read()

    assert (busy.name, busy.memory_total_mib, busy.memory_used_mib) == (
        "NVIDIA GeForce RTX 4090",
        24564,
        21807,
    )
    assert busy.power_w is None
    assert idle.power_w is None
    assert busy.power_limit_w == 450.0
    assert (busy.utilization_pct, busy.temperature_c) == (88.0, 71.0)


@pytest.mark.parametrize(
    "function",
    [
        "nvmlDeviceGetUtilizationRates",
        "nvmlDeviceGetTemperature",
        "nvmlDeviceGetEnforcedPowerLimit",
        "nvmlDeviceGetComputeRunningProcesses",
    ],
)
@pytest.mark.parametrize(
    "error", ["NVML_ERROR_NOT_SUPPORTED", "NVML_ERROR_NO_PERMISSION", "NVML_ERROR_UNKNOWN"]
)
def test_every_optional_reading_that_raises_becomes_none(
    recorded_nvml: Recorded, function: str, error: str
) -> None:
    replay = recorded_nvml("a100_sxm4_80gb_x8")
    replay.recording["devices"][3][function] = {"nvml_error": error}

    readings = NvmlGpus(nvml=replay).read()

    field = {
        "nvmlDeviceGetUtilizationRates": "utilization_pct",
        "nvmlDeviceGetTemperature": "temperature_c",
        "nvmlDeviceGetEnforcedPowerLimit": "power_limit_w",
        "nvmlDeviceGetComputeRunningProcesses": "processes",
    }[function]
    assert getattr(readings[3], field) is None
    assert getattr(readings[2], field) is not None
    assert readings[3].memory_total_mib == 81920


def test_names_and_uuids_that_come_back_as_bytes_are_decoded(recorded_nvml: Recorded) -> None:
    (h100,) = NvmlGpus(nvml=recorded_nvml("h100_bytes_names")).read()

    assert h100.name == "NVIDIA H100 80GB HBM3"
    assert h100.uuid == "GPU-e1d2c3b4-a596-8778-695a-4b3c2d1e0f9a"
    assert (h100.memory_total_mib, h100.memory_used_mib, h100.memory_free_mib) == (81559, 9216, 72343)
    assert (h100.power_w, h100.power_limit_w) == (118.734, 700.0)


def test_a_lost_gpu_is_read_as_unreadable_saying_why_and_the_others_are_read(recorded_nvml: Recorded) -> None:
    gpus = NvmlGpus(nvml=recorded_nvml("gpu_lost"))

    good, lost = gpus.read()

    assert lost == GpuInfo.unreadable(1, "NVML could not read the handle of GPU 1: GPU is lost.")
    assert (lost.memory_total_mib, lost.memory_free_mib) == (0, 0)
    assert good.fault is None and good.index == 0 and good.memory_total_mib > 0


@pytest.mark.parametrize("function", ["nvmlDeviceGetName", "nvmlDeviceGetUUID", "nvmlDeviceGetMemoryInfo"])
def test_a_required_reading_that_raises_makes_that_gpu_unreadable(
    recorded_nvml: Recorded, function: str
) -> None:
    replay = recorded_nvml("rtx4090_x2_power_not_supported")
    replay.recording["devices"][0][function] = {"nvml_error": "NVML_ERROR_UNKNOWN"}

    first, second = NvmlGpus(nvml=replay).read()

    assert first.fault is not None and first.fault.endswith("of GPU 0: Unknown Error.")
    assert second.fault is None and second.name == "NVIDIA GeForce RTX 4090"


def test_nvml_that_cannot_count_the_gpus_fails_the_read(recorded_nvml: Recorded) -> None:
    replay = recorded_nvml("rtx4090_x2_power_not_supported")
    replay.recording["nvmlDeviceGetCount"] = {"nvml_error": "NVML_ERROR_UNKNOWN"}

    with pytest.raises(GpuInventoryError, match="NVML could not read the device count: Unknown Error"):
        NvmlGpus(nvml=replay).read()


def test_an_unreadable_gpu_survives_the_heartbeat_record() -> None:
    lost = GpuInfo.unreadable(3, "NVML could not read the handle of GPU 3: GPU is lost.")

    assert GpuInfo.from_dict(lost.to_dict()) == lost


def test_nvml_that_cannot_start_raises_an_inventory_error(recorded_nvml: Recorded) -> None:
    with pytest.raises(GpuInventoryError, match=r"NVML could not start \(Driver Not Loaded\)") as caught:
        NvmlGpus(nvml=recorded_nvml("driver_not_loaded"))

    assert caught.value.details == {"nvml_error": pynvml.NVML_ERROR_DRIVER_NOT_LOADED}


def test_nvml_is_started_once_and_shut_down_once_however_often_it_is_read(recorded_nvml: Recorded) -> None:
    replay = recorded_nvml("h100_bytes_names")
    gpus = NvmlGpus(nvml=replay)

    gpus.read()
    gpus.read()
    gpus.close()
    gpus.close()

    assert replay.calls.count("nvmlInit") == 1
    assert replay.calls.count("nvmlShutdown") == 1
    assert replay.init_depth == 0


def test_a_closed_nvml_monitor_refuses_to_read(recorded_nvml: Recorded) -> None:
    gpus = NvmlGpus(nvml=recorded_nvml("h100_bytes_names"))
    gpus.close()

    with pytest.raises(GpuInventoryError, match="closed"):
        gpus.read()


def test_a_node_with_the_driver_but_no_devices_reads_an_empty_list(recorded_nvml: Recorded) -> None:
    assert NvmlGpus(nvml=recorded_nvml("zero_devices")).read() == []


@pytest.mark.parametrize(
    ("recording", "available"),
    [
        ("a100_sxm4_80gb_x8", True),
        ("h100_bytes_names", True),
        ("zero_devices", False),
        ("driver_not_loaded", False),
    ],
)
def test_nvml_is_available_only_when_it_starts_and_sees_a_gpu(
    recorded_nvml: Recorded, recording: str, available: bool
) -> None:
    replay = recorded_nvml(recording)

    assert nvml_available(nvml=replay) is available
    assert replay.init_depth == 0  # the probe leaves NVML as it found it


@pytest.mark.skipif(has_nvidia_driver(), reason="this machine has an NVIDIA driver")
def test_the_real_nvml_is_unavailable_on_a_machine_without_a_driver() -> None:
    assert nvml_available() is False
    with pytest.raises(GpuInventoryError, match="NVML could not start"):
        NvmlGpus()


def test_the_replay_raises_pynvmls_own_error_classes_with_their_codes() -> None:
    error = nvml_error("NVML_ERROR_NOT_SUPPORTED")

    assert type(error) is pynvml.NVMLError_NotSupported
    assert error.value == pynvml.NVML_ERROR_NOT_SUPPORTED
    assert str(error) == "Not Supported"
    assert decode({"bytes": "abc"}) == b"abc"


def test_the_replay_refuses_calls_before_nvml_is_started() -> None:
    replay = ReplayNvml.load("a100_sxm4_80gb_x8")

    with pytest.raises(pynvml.NVMLError_Uninitialized):
        replay.nvmlDeviceGetCount()


def test_every_recording_has_the_format_and_one_device_entry_per_counted_gpu() -> None:
    for path in sorted(RECORDED.glob("*.json")):
        replay = ReplayNvml.load(path.stem)
        count = replay.recording["nvmlDeviceGetCount"]
        if isinstance(count, int):
            assert len(replay.recording["devices"]) == count, path.name
        assert replay.recording["description"], path.name
