"""Off-peak windows (across midnight, in a zone with DST), tariff costs across boundaries, energy."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from scheduler.policy.tariff import Tariff, estimate_cost, estimate_energy_kwh, gpu_power_w
from scheduler.policy.windows import current_window, next_window_start, offpeak_start_s, parse_windows


def ts(text: str, tz: str = "UTC") -> float:
    return datetime.fromisoformat(text).replace(tzinfo=ZoneInfo(tz)).timestamp()


def test_a_window_across_midnight_holds_late_evening_and_early_morning() -> None:
    w = parse_windows("23:00-07:00")
    assert current_window(w, ts("2024-03-05 23:30"), "UTC") == (
        ts("2024-03-05 23:00"),
        ts("2024-03-06 07:00"),
    )
    assert current_window(w, ts("2024-03-06 06:59"), "UTC") == (
        ts("2024-03-05 23:00"),
        ts("2024-03-06 07:00"),
    )
    assert current_window(w, ts("2024-03-06 07:00"), "UTC") is None
    assert next_window_start(w, ts("2024-03-06 12:00"), "UTC") == ts("2024-03-06 23:00")


@pytest.mark.parametrize(
    ("at", "run_h", "starts"),
    [
        ("2024-03-06 05:30", 1.0, "2024-03-06 05:30"),  # ends 06:30, inside the window: now
        ("2024-03-06 05:30", 1.5, "2024-03-06 05:30"),  # ends at 07:00 exactly: now
        ("2024-03-06 05:30", 2.0, "2024-03-06 23:00"),  # would run past 07:00: the next window
        ("2024-03-06 05:30", 9.0, "2024-03-06 05:30"),  # longer than any window: now, it never fits better
        ("2024-03-06 12:00", 1.0, "2024-03-06 23:00"),  # outside: the next window's start
    ],
)
def test_an_offpeak_task_starts_in_a_window_only_with_room_for_its_run(
    at: str, run_h: float, starts: str
) -> None:
    w = parse_windows("23:00-07:00")
    assert offpeak_start_s(w, ts(at), UTC, run_h * 3600) == ts(starts)


def test_offpeak_start_reads_wall_clock_in_the_zone_given_and_is_free_without_windows() -> None:
    beijing = timezone(timedelta(hours=8))
    now_s = datetime(2024, 3, 6, 6, 30, tzinfo=beijing).timestamp()  # 06:30 there, 22:30 UTC
    assert offpeak_start_s(parse_windows("23:00-07:00"), now_s, beijing, 3600) == (
        datetime(2024, 3, 6, 23, 0, tzinfo=beijing).timestamp()
    )
    assert offpeak_start_s((), now_s, beijing, 3600) is None


def test_several_windows_and_bad_text() -> None:
    w = parse_windows("23:00-07:00, 12:00-13:00")
    assert next_window_start(w, ts("2024-03-06 08:00"), "UTC") == ts("2024-03-06 12:00")
    with pytest.raises(ValueError, match="25:00"):
        parse_windows("25:00-07:00")
    with pytest.raises(ValueError, match="HH:MM"):
        parse_windows("tonight")


def test_windows_follow_local_wall_time_across_a_dst_change() -> None:
    # Europe/Paris moves clocks forward on 2024-03-31 at 02:00: the night is one hour shorter.
    w = parse_windows("23:00-07:00")
    start, end = current_window(w, ts("2024-03-31 01:00", "Europe/Paris"), "Europe/Paris") or (0.0, 0.0)
    assert start == ts("2024-03-30 23:00", "Europe/Paris")
    assert end == ts("2024-03-31 07:00", "Europe/Paris")
    assert end - start == 7 * 3600


def test_windows_in_a_zone_without_dst_keep_their_length() -> None:
    w = parse_windows("22:00-06:00")
    start, end = current_window(w, ts("2024-03-31 01:00", "Asia/Tokyo"), "Asia/Tokyo") or (0.0, 0.0)
    assert end - start == 8 * 3600 and start == ts("2024-03-30 22:00", "Asia/Tokyo")


def test_cost_across_a_tariff_boundary_prices_each_part_at_its_rate() -> None:
    tariff = Tariff.from_hours({0: 0.10, 7: 0.30, 23: 0.10})
    # 06:00-08:00 on a Wednesday: one hour at 0.10 and one at 0.30, 2 kWh spread evenly.
    cost = estimate_cost(ts("2024-03-06 06:00"), ts("2024-03-06 08:00"), 2.0, tariff)
    assert cost == pytest.approx(1.0 * 0.10 + 1.0 * 0.30)
    # Half hours at the edges count in proportion.
    cost = estimate_cost(ts("2024-03-06 06:30"), ts("2024-03-06 07:30"), 1.0, tariff)
    assert cost == pytest.approx(0.5 * 0.10 + 0.5 * 0.30)


def test_weekends_use_their_own_prices() -> None:
    tariff = Tariff.from_hours({0: 0.30}, {0: 0.05})
    assert estimate_cost(ts("2024-03-09 10:00"), ts("2024-03-09 11:00"), 1.0, tariff) == pytest.approx(0.05)
    assert tariff.price_at(ts("2024-03-08 10:00")) == 0.30


def test_energy_from_model_default_or_measured_power() -> None:
    assert gpu_power_w("NVIDIA A100-SXM4-80GB") == 400.0
    assert gpu_power_w("NVIDIA A100-SXM4-80GB", measured_w=250.0) == 250.0
    assert gpu_power_w("mystery") == 300.0
    assert estimate_energy_kwh(2, 400.0, 3600.0) == pytest.approx(0.8)
