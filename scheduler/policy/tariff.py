"""Energy and cost estimates: GPU power × run time, priced by a time-of-use tariff (hour → price per kWh)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from scheduler.policy.windows import zone

J_PER_KWH = 3.6e6

# Board power (W) per GPU model, used when NVML gives no measurement. Matched by substring, longest first.
DEFAULT_GPU_POWER_W: Mapping[str, float] = {
    "H200": 700.0,
    "H100": 700.0,
    "A100": 400.0,
    "A10": 150.0,
    "L40": 300.0,
    "L4": 72.0,
    "V100": 300.0,
    "T4": 70.0,
    "4090": 450.0,
    "3090": 350.0,
    "P100": 250.0,
}
FALLBACK_GPU_POWER_W = 300.0


def gpu_power_w(
    model: str, measured_w: float | None = None, table: Mapping[str, float] | None = None
) -> float:
    """Power of one GPU: the measured value when there is one, else the model's default, else 300 W."""
    if measured_w is not None and measured_w > 0:
        return measured_w
    table = DEFAULT_GPU_POWER_W if table is None else table
    for key in sorted(table, key=len, reverse=True):
        if key and key.lower() in model.lower():
            return table[key]
    return table.get("", FALLBACK_GPU_POWER_W)


@dataclass(frozen=True, slots=True)
class Tariff:
    """Price per kWh for each local hour (0-23), one table for weekdays and one for weekends."""

    weekday: tuple[float, ...]
    weekend: tuple[float, ...]
    timezone: str = "UTC"
    currency: str = "EUR"

    def __post_init__(self) -> None:
        if len(self.weekday) != 24 or len(self.weekend) != 24:
            raise ValueError("a tariff needs 24 hourly prices for weekdays and 24 for weekends")
        if min(self.weekday + self.weekend) < 0:
            raise ValueError("tariff prices must be >= 0")

    @classmethod
    def flat(cls, price_per_kwh: float, timezone: str = "UTC") -> Tariff:
        """One price at every hour."""
        return cls((price_per_kwh,) * 24, (price_per_kwh,) * 24, timezone)

    @classmethod
    def from_hours(
        cls,
        weekday: Mapping[int, float] | Sequence[float],
        weekend: Mapping[int, float] | Sequence[float] | None = None,
        timezone: str = "UTC",
    ) -> Tariff:
        """Build from `{hour: price}` (an hour holds until the next listed one) or 24 prices."""
        week = _expand(weekday)
        return cls(week, _expand(weekend) if weekend is not None else week, timezone)

    def price_at(self, epoch_s: float) -> float:
        """Price per kWh at `epoch_s` (local hour, weekday or weekend)."""
        local = datetime.fromtimestamp(epoch_s, zone(self.timezone))
        table = self.weekend if local.weekday() >= 5 else self.weekday
        return table[local.hour]


def _expand(prices: Mapping[int, float] | Sequence[float]) -> tuple[float, ...]:
    """`{0: 0.1, 7: 0.3, 23: 0.1}` -> 24 prices (hours before the first key take the last key's price)."""
    if not isinstance(prices, Mapping):
        return tuple(float(p) for p in prices)
    if not prices:
        raise ValueError("a tariff needs at least one hourly price")
    if any(not 0 <= h <= 23 for h in prices):
        raise ValueError(f"tariff hours must be 0-23, got {sorted(prices)}")
    keys = sorted(prices)
    out: list[float] = []
    for hour in range(24):
        at_or_before = [k for k in keys if k <= hour]
        out.append(float(prices[at_or_before[-1] if at_or_before else keys[-1]]))
    return tuple(out)


# Placeholder default: cheaper at night (23:00-07:00) and at weekends. Set a real one in the config.
DEFAULT_TARIFF = Tariff.from_hours({0: 0.15, 7: 0.30, 23: 0.15}, {0: 0.15})


def estimate_energy_kwh(gpus: int, power_w: float, duration_s: float) -> float:
    """Energy of `gpus` GPUs drawing `power_w` each for `duration_s`."""
    return max(0, gpus) * max(0.0, power_w) * max(0.0, duration_s) / J_PER_KWH


def estimate_cost(start_s: float, end_s: float, kwh: float, tariff: Tariff) -> float:
    """Cost of `kwh` drawn evenly over [start_s, end_s], each part priced at its local hour's rate."""
    if end_s <= start_s or kwh <= 0:
        return 0.0
    tz = zone(tariff.timezone)
    per_s = kwh / (end_s - start_s)
    total = 0.0
    t = start_s
    while t < end_s:
        local = datetime.fromtimestamp(t, tz)
        hour_start = local.replace(minute=0, second=0, microsecond=0).timestamp()
        nxt = min(end_s, hour_start + 3600.0)
        if nxt <= t:  # guard against odd zone data
            nxt = min(end_s, t + 3600.0)
        table = tariff.weekend if local.weekday() >= 5 else tariff.weekday
        total += table[local.hour] * per_s * (nxt - t)
        t = nxt
    return total
