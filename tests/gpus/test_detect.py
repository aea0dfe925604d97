"""Choosing the GPU monitor: simulated, NVML, or none."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest

from scheduler.errors import GpuInventoryError
from scheduler.gpus import NoGpus, NvmlGpus, SimulatedGpus, nvml_available, open_gpu_monitor

from .nvml_replay import ReplayNvml

Recorded = Callable[[str], ReplayNvml]


def test_a_simulate_spec_gives_simulated_gpus_named_after_the_node(recorded_nvml: Recorded) -> None:
    monitor = open_gpu_monitor("2x80,2x24", "box1", nvml=recorded_nvml("a100_sxm4_80gb_x8"))

    assert isinstance(monitor, SimulatedGpus)
    assert monitor.source == "simulated"
    assert [g.uuid for g in monitor.read()] == ["SIM-box1-0", "SIM-box1-1", "SIM-box1-2", "SIM-box1-3"]


def test_a_simulate_spec_wins_over_real_gpus_without_touching_nvml(recorded_nvml: Recorded) -> None:
    replay = recorded_nvml("a100_sxm4_80gb_x8")

    open_gpu_monitor("1x24", "box1", nvml=replay)

    assert replay.calls == []


def test_a_bad_simulate_spec_is_an_error_not_a_silent_fallback() -> None:
    with pytest.raises(GpuInventoryError, match="'0x24'"):
        open_gpu_monitor("0x24", "box1")


@pytest.mark.parametrize("simulate", [None, "", "  "])
def test_without_a_simulate_spec_nvml_is_used_when_it_sees_gpus(
    recorded_nvml: Recorded, simulate: str | None
) -> None:
    monitor = open_gpu_monitor(simulate, "box1", nvml=recorded_nvml("a100_sxm4_80gb_x8"))

    assert isinstance(monitor, NvmlGpus)
    assert monitor.source == "nvml"
    assert len(monitor.read()) == 8


@pytest.mark.parametrize("recording", ["driver_not_loaded", "zero_devices", "count_fails"])
def test_a_node_where_nvml_cannot_start_or_read_gpus_becomes_cpu_only(
    recorded_nvml: Recorded, recording: str, caplog: pytest.LogCaptureFixture
) -> None:
    if recording == "count_fails":
        replay = recorded_nvml("rtx4090_x2_power_not_supported")
        replay.recording["nvmlDeviceGetCount"] = {"nvml_error": "NVML_ERROR_UNKNOWN"}
    else:
        replay = recorded_nvml(recording)

    with caplog.at_level(logging.INFO, logger="scheduler.gpus.detect"):
        monitor = open_gpu_monitor(None, "box1", nvml=replay)

    assert isinstance(monitor, NoGpus)
    assert monitor.source == "none"
    assert monitor.read() == []
    assert replay.init_depth == 0  # NVML was shut down again, or never started
    assert "GPUs on box1: none" in caplog.text or "using none" in caplog.text


def test_a_node_with_a_lost_gpu_serves_the_others_and_says_which_is_lost(
    recorded_nvml: Recorded, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="scheduler.gpus.detect"):
        monitor = open_gpu_monitor(None, "box1", nvml=recorded_nvml("gpu_lost"))

    assert isinstance(monitor, NvmlGpus)
    assert [gpu.fault is None for gpu in monitor.read()] == [True, False]
    assert "GPUs on box1: 2 from NVML" in caplog.text
    assert "GPU box1:1 takes no tasks: NVML could not read the handle of GPU 1: GPU is lost." in caplog.text


def test_on_this_machine_the_choice_follows_what_the_real_nvml_reports() -> None:
    # On a machine without an NVIDIA driver this is the CPU-only fallback; on a GPU box, NVML.
    monitor = open_gpu_monitor(None, "here")
    try:
        assert monitor.source == ("nvml" if nvml_available() else "none")
    finally:
        monitor.close()
