"""GpuInfo and the GpuMonitor seam."""

from __future__ import annotations

import dataclasses
import json

import pytest

from scheduler.gpus import GpuInfo, GpuMonitor, GpuProcess, NoGpus, NvmlGpus, SimulatedGpus

from .nvml_replay import ReplayNvml


def make_info(**overrides: object) -> GpuInfo:
    fields: dict[str, object] = {
        "index": 0,
        "uuid": "GPU-1",
        "name": "NVIDIA A100-SXM4-80GB",
        "memory_total_mib": 81920,
        "memory_used_mib": 1024,
        "memory_free_mib": 80896,
        "utilization_pct": 50.0,
        "temperature_c": 60.0,
        "power_w": 250.5,
        "power_limit_w": 400.0,
    }
    fields.update(overrides)
    return GpuInfo(**fields)  # type: ignore[arg-type]


def test_gpu_info_to_dict_is_json_with_the_field_names_and_units() -> None:
    data = json.loads(json.dumps(make_info().to_dict()))

    assert data == {
        "index": 0,
        "uuid": "GPU-1",
        "name": "NVIDIA A100-SXM4-80GB",
        "memory_total_mib": 81920,
        "memory_used_mib": 1024,
        "memory_free_mib": 80896,
        "utilization_pct": 50.0,
        "temperature_c": 60.0,
        "power_w": 250.5,
        "power_limit_w": 400.0,
        "processes": None,
        "fault": None,
    }


def test_gpu_info_survives_a_round_trip_through_json_with_missing_readings() -> None:
    info = make_info(utilization_pct=None, temperature_c=None, power_w=None, power_limit_w=None)

    assert GpuInfo.from_dict(json.loads(json.dumps(info.to_dict()))) == info
    listed = make_info(processes=(GpuProcess(4242, 40960), GpuProcess(7, None)))
    assert json.loads(json.dumps(listed.to_dict()))["processes"] == [
        {"pid": 4242, "used_mib": 40960},
        {"pid": 7, "used_mib": None},
    ]
    assert GpuInfo.from_dict(json.loads(json.dumps(listed.to_dict()))) == listed


def test_gpu_info_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        make_info().index = 1  # type: ignore[misc]


def test_a_cpu_only_node_reads_no_gpus_and_says_so() -> None:
    monitor = NoGpus()

    assert monitor.source == "none"
    assert monitor.read() == []
    monitor.close()
    monitor.close()


def test_every_monitor_implements_the_protocol() -> None:
    monitors: list[GpuMonitor] = [
        NoGpus(),
        SimulatedGpus("1x24"),
        NvmlGpus(nvml=ReplayNvml.load("h100_bytes_names")),
    ]

    for monitor in monitors:
        assert isinstance(monitor, GpuMonitor)
    assert [m.source for m in monitors] == ["none", "simulated", "nvml"]
