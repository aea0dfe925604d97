"""Fair share from decayed past usage (Slurm's classic factor 2^(-usage/share)): between teams, then among
the members of a team, as Slurm's fair tree ranks users within an account."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from scheduler.policy.config import PolicyConfig, TeamUsage
from scheduler.policy.types import QueuedTask


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


def fairshare_by_member(
    usage: Mapping[str, TeamUsage], members: Iterable[tuple[str, str]], within_teams: bool = True
) -> dict[tuple[str, str], float]:
    """Factor in (0, 1] per (team, person): the team's factor (`fairshare_factors` over the members' teams),
    shared out among its members by their part of the team's decayed usage. A member who used an equal part
    keeps the team's factor, one who used less gets more (at most 1), one who used more gets less; so in a
    lab of one team, the person who ran little lately goes ahead of the one who ran a lot. A team of one
    person, or whose members used nothing, keeps the team's factor exactly; so does every member when
    `within_teams` is off (`fairshare_within_teams`)."""
    wanted = list(dict.fromkeys(members))
    team_factors = fairshare_factors(usage, {team for team, _ in wanted})
    in_window: dict[str, set[str]] = {}
    for team, user in wanted:
        in_window.setdefault(team, set()).add(user)
    if not within_teams:
        return {(team, user): team_factors.get(team, 1.0) for team, user in wanted}
    weights = {team: member_weights(usage.get(team), users) for team, users in in_window.items()}
    return {
        (team, user): min(1.0, team_factors.get(team, 1.0) * weights[team][user]) for team, user in wanted
    }


def member_weights(team: TeamUsage | None, waiting: Iterable[str]) -> dict[str, float]:
    """2^(1 - n * part) for each person of `waiting`: their part of the team's decayed usage against an equal
    part of its n members (those who used GPUs lately and those who wait now): 1 for an equal part, up to 2
    for none, down to 2^(1-n) for all of it; 1 when the team has one member or no usage."""
    used = team.member_decayed_gpu_s if team is not None else {}
    people = set(waiting)
    total = sum(max(0.0, gpu_s) for gpu_s in used.values())
    n = len({name for name, gpu_s in used.items() if gpu_s > 0} | people)
    if n <= 1 or total <= 0:
        return dict.fromkeys(people, 1.0)
    return {user: math.pow(2.0, 1.0 - n * max(0.0, used.get(user, 0.0)) / total) for user in people}


def fairshare_of_tasks(
    tasks: Iterable[QueuedTask], usage: Mapping[str, TeamUsage] | None, config: PolicyConfig
) -> dict[tuple[str, str], float]:
    """The fair-share factor of each (team, person) among `tasks`, as `decide` ranks them (none where the
    policy gives no credits: fifo, backfill); look a task up with `(task.team, task.user)`, default 1."""
    if not config.credits_on:
        return {}
    return fairshare_by_member(usage or {}, [(t.team, t.user) for t in tasks], config.fairshare_within_teams)
