"""Fair share between teams from decayed past usage (Slurm's classic factor 2^(-usage/share))."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from scheduler.policy.config import TeamUsage


def decay_factor(age_s: float, half_life_s: float) -> float:
    """How much of a GPU-second used `age_s` ago still counts: 0.5 ** (age_s / half_life_s)."""
    return float(0.5 ** (max(0.0, age_s) / half_life_s))


def fairshare_factors(usage: Mapping[str, TeamUsage], teams: Iterable[str]) -> dict[str, float]:
    """Factor in (0, 1] per team: 2^(-U/S), U = the team's part of all decayed usage, S = 1/number of teams.

    A team that used nothing lately gets 1.0; a team that used exactly its equal share gets 0.5; a team that
    used everything among N teams gets 2^-N. Teams missing from `usage` count as having used nothing.
    """
    names = set(teams) | set(usage)
    if not names:
        return {}
    total = sum(max(0.0, u.decayed_gpu_s) for u in usage.values())
    share = 1.0 / len(names)
    out: dict[str, float] = {}
    for team in names:
        used = max(0.0, usage[team].decayed_gpu_s) if team in usage else 0.0
        part = used / total if total > 0 else 0.0
        out[team] = math.pow(2.0, -part / share)
    return out
