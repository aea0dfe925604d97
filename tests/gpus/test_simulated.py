"""Parsing NIGHTSHIFT_SIMULATE_GPUS and the scripted simulated GPUs."""

from __future__ import annotations

import threading

import pytest

from scheduler.errors import GpuInventoryError
from scheduler.gpus import DEFAULT_SIMULATED_GPU_GB, SimulatedGpus, SimulatedGpuType, parse_simulated_gpus


def sizes(spec: str) -> list[float]:
    return [gpu.memory_gb for gpu in parse_simulated_gpus(spec)]


@pytest.mark.parametrize(
    ("spec", "expected_gb"),
    [
        ("4x24", [24, 24, 24, 24]),
        ("2x80,2x24", [80, 80, 24, 24]),
        ("1x40.5", [40.5]),
        ("8", [DEFAULT_SIMULATED_GPU_GB] * 8),
        (" 1x80 , 1X48GB ,1×16gb ", [80, 48, 16]),
        ("64x24", [24] * 64),
        ("32x80,32x24", [80] * 32 + [24] * 32),
    ],
)
def test_simulated_gpu_specs_are_parsed_in_order_one_entry_per_gpu(
    spec: str, expected_gb: list[float]
) -> None:
    assert sizes(spec) == expected_gb


@pytest.mark.parametrize(
    ("spec", "names"),
    [
        ("", "is empty"),
        ("   ", "is empty"),
        ("0x24", "'0x24'"),
        ("4x", "'4x'"),
        ("ax24", "'ax24'"),
        ("-2x24", "'-2x24'"),
        ("2x-24", "'2x-24'"),
        ("2x0", "'2x0'"),
        ("4x24,,2x80", "part 2 is empty"),
        ("4x24,", "part 2 is empty"),
        ("x24", "'x24'"),
        ("2x24x3", "'2x24x3'"),
        ("2xabc", "'2xabc'"),
        ("2xnan", "'2xnan'"),
        ("1.5x24", "'1.5x24'"),
        ("2x4096", "'2x4096'"),
        ("65x24", "more than 64 GPUs"),
        ("40x80,40x24", "more than 64 GPUs"),
        ("99999999999999x24", "more than 64 GPUs"),
    ],
)
def test_bad_simulated_gpu_specs_name_the_bad_part_and_show_the_expected_form(spec: str, names: str) -> None:
    with pytest.raises(GpuInventoryError) as caught:
        parse_simulated_gpus(spec)

    assert names in caught.value.message
    assert "COUNTxGB" in caught.value.message
    assert "e.g. 4x24 or 2x80,2x24" in caught.value.message


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ("0x24", "at least 1"),
        ("-2x24", "negative"),
        ("4x", "GB per GPU after 'x' is missing"),
        ("ax24", "'a' is not a whole number"),
        ("2x-24", "negative"),
        ("2x0", "more than 0"),
        ("2x24x3", "more than one 'x'"),
    ],
)
def test_bad_simulated_gpu_specs_say_what_is_wrong(spec: str, problem: str) -> None:
    with pytest.raises(GpuInventoryError, match=problem):
        parse_simulated_gpus(spec)


def test_a_simulated_gpu_type_derives_memory_name_and_power_from_its_size() -> None:
    gpu = SimulatedGpuType(80)

    assert gpu.memory_total_mib == 81920  # as NVML reports a real 80 GB card
    assert gpu.name == "Simulated GPU 80GB"
    assert gpu.tdp_w == 400.0
    assert gpu.idle_power_w == 60.0
    assert SimulatedGpuType(40.5).memory_total_mib == 41472
    assert SimulatedGpuType(40.5).name == "Simulated GPU 40.5GB"
    assert SimulatedGpuType(141).tdp_w == 700.0


def test_simulated_gpus_read_as_idle_until_scripted() -> None:
    gpus = SimulatedGpus("1x80,1x24", node="box1")

    first, second = gpus.read()

    assert gpus.source == "simulated"
    assert first.index == 0
    assert first.uuid == "SIM-box1-0"
    assert first.name == "Simulated GPU 80GB"
    assert (first.memory_total_mib, first.memory_used_mib, first.memory_free_mib) == (81920, 0, 81920)
    assert first.utilization_pct == 0.0
    assert first.temperature_c == 35.0
    assert first.power_w == pytest.approx(0.15 * first.power_limit_w)  # type: ignore[operator]
    assert (second.index, second.uuid, second.memory_total_mib) == (1, "SIM-box1-1", 24576)


def test_simulated_gpu_uuids_are_stable_and_differ_between_nodes() -> None:
    assert [g.uuid for g in SimulatedGpus("2x24").read()] == ["SIM-0", "SIM-1"]
    assert [g.uuid for g in SimulatedGpus("2x24", node="a").read()] == [
        g.uuid for g in SimulatedGpus("2x24", node="a").read()
    ]
    assert SimulatedGpus("1x24", node="a").read()[0].uuid != SimulatedGpus("1x24", node="b").read()[0].uuid


def test_simulated_gpus_can_be_built_from_parsed_types() -> None:
    gpus = SimulatedGpus(parse_simulated_gpus("1x48"))

    assert gpus.read()[0].memory_total_mib == 48 * 1024


def test_scripted_readings_are_reported_and_free_memory_follows_used_memory() -> None:
    gpus = SimulatedGpus("2x24")

    gpus.set_reading(1, memory_used_mib=20000, utilization_pct=93.5, temperature_c=71, power_w=301.2)
    idle, busy = gpus.read()

    assert (busy.memory_used_mib, busy.memory_free_mib) == (20000, 24576 - 20000)
    assert (busy.utilization_pct, busy.temperature_c, busy.power_w) == (93.5, 71.0, 301.2)
    assert idle.memory_used_mib == 0


def test_a_scripted_reading_keeps_the_values_it_was_not_given() -> None:
    gpus = SimulatedGpus("1x24")
    gpus.set_reading(0, memory_used_mib=1000, utilization_pct=40)

    gpus.set_reading(0, temperature_c=80)
    info = gpus.read()[0]

    assert (info.memory_used_mib, info.utilization_pct, info.temperature_c) == (1000, 40.0, 80.0)


@pytest.mark.parametrize(
    ("index", "changes", "message"),
    [
        (2, {"memory_used_mib": 1}, "No simulated GPU 2: this monitor has 2"),
        (-1, {"memory_used_mib": 1}, "No simulated GPU -1"),
        (0, {"memory_used_mib": 24577}, "memory_used_mib=24577 is outside 0..24576"),
        (0, {"memory_used_mib": -1}, "memory_used_mib=-1 is outside"),
        (0, {"utilization_pct": 101}, "utilization_pct=101 is outside 0..100"),
    ],
)
def test_impossible_scripted_readings_are_refused(
    index: int, changes: dict[str, float], message: str
) -> None:
    gpus = SimulatedGpus("2x24")

    with pytest.raises(GpuInventoryError, match=message):
        gpus.set_reading(index, **changes)  # type: ignore[arg-type]


def test_a_scripted_failure_makes_reads_fail_until_cleared() -> None:
    gpus = SimulatedGpus("1x24")

    gpus.set_failure("NVML: GPU is lost")
    with pytest.raises(GpuInventoryError, match="GPU is lost"):
        gpus.read()
    gpus.set_failure(None)

    assert len(gpus.read()) == 1


def test_a_closed_simulated_monitor_refuses_to_read() -> None:
    gpus = SimulatedGpus("1x24")
    gpus.close()
    gpus.close()

    with pytest.raises(GpuInventoryError, match="closed"):
        gpus.read()


def test_a_reader_thread_never_sees_a_half_written_reading() -> None:
    # Given a worker thread reading while the test thread scripts all fields together
    gpus = SimulatedGpus("1x24")
    gpus.set_reading(0, memory_used_mib=0, utilization_pct=0, temperature_c=0)
    torn: list[tuple[int, float | None, float | None]] = []
    done = threading.Event()

    def reader() -> None:
        while not done.is_set():
            info = gpus.read()[0]
            if not (info.utilization_pct == info.temperature_c == info.memory_used_mib % 100):
                torn.append((info.memory_used_mib, info.utilization_pct, info.temperature_c))

    thread = threading.Thread(target=reader)
    thread.start()
    # When every write changes memory, utilization and temperature at once
    for step in range(5000):
        gpus.set_reading(0, memory_used_mib=step, utilization_pct=step % 100, temperature_c=step % 100)
    done.set()
    thread.join()

    # Then every read saw one consistent write
    assert torn == []
