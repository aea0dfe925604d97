"""The knobs of the policy (`PolicyConfig`) and the per-team usage the caller passes in (`TeamUsage`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from scheduler.policy.priority import DEFAULT_CLASS_STEP_S
from scheduler.policy.tariff import DEFAULT_GPU_POWER_W, DEFAULT_TARIFF, Tariff
from scheduler.policy.windows import DailyWindow, parse_windows, zone

PolicyName = Literal["fifo", "backfill", "nightshift"]
POLICIES: tuple[PolicyName, ...] = ("fifo", "backfill", "nightshift")


@dataclass(frozen=True, slots=True)
class TeamUsage:
    """GPU-seconds a team has used, computed by the caller (SQL live, its own history in the simulator)."""

    team: str
    decayed_gpu_s: float = 0.0  # sum of gpu_s * 0.5 ** (age_s / half_life_s), running work included
    gpu_s_last_day: float = 0.0  # rolling 24 h, running work included
    gpu_s_last_week: float = 0.0  # rolling 7 days, running work included
    # when a used-up day/week budget frees again (`rolling.budget_frees_at_s`); None when none is used up
    budget_frees_at_s: float | None = None
    # the period ("day", "week") that holds new work back until then (`rolling.budget_frees`)
    budget_frees_by: str | None = None
    # decayed GPU-seconds of each member (person) of the team: fair share within it (`fairshare_by_member`)
    member_decayed_gpu_s: Mapping[str, float] = field(default_factory=dict)
    # each member's rolling 24 h / 7 day GPU-seconds in this team (their own budgets), running work included
    member_gpu_s_last_day: Mapping[str, float] = field(default_factory=dict)
    member_gpu_s_last_week: Mapping[str, float] = field(default_factory=dict)
    # when a member's used-up budget frees (`rolling.budget_frees_at_s`); absent when none is used up
    member_budget_frees_at_s: Mapping[str, float] = field(default_factory=dict)


class Budgets(NamedTuple):
    """Rolling GPU-hour budgets of a team or a person: the last 24 h and the last 7 days (None: none)."""

    day_h: float | None
    week_h: float | None


@dataclass(frozen=True)
class PolicyConfig:
    """Everything the policy can be told. Frozen; the parsed off-peak windows are checked at construction.

    Ordering (lower key runs first; every credit is bounded, which gives the starvation bound):
    key = enqueued_at_s - class * class_step_s - short_job_credit - fair_share_credit - deadline_credit.
    `fifo` and `backfill` use only the first two terms.
    """

    policy: PolicyName = "nightshift"
    class_step_s: float = DEFAULT_CLASS_STEP_S
    window: int = 128  # queued tasks one pass looks at (the first ones by static score)
    window_per_person: int = 2  # and each person's first queued tasks beyond it (`policy.window`)
    # Quotas
    team_gpu_caps: Mapping[str, int] = field(default_factory=dict)
    default_team_gpu_cap: int | None = None
    user_gpu_caps: Mapping[str, int] = field(default_factory=dict)  # per person, across their teams
    default_user_gpu_cap: int | None = None
    day_budget_gpu_h: Mapping[str, float] = field(default_factory=dict)
    week_budget_gpu_h: Mapping[str, float] = field(default_factory=dict)
    # a person's own budgets, in each team they work in (Slurm's user association under an account)
    user_day_budget_gpu_h: Mapping[str, float] = field(default_factory=dict)
    user_week_budget_gpu_h: Mapping[str, float] = field(default_factory=dict)
    default_user_day_budget_gpu_h: float | None = None
    default_user_week_budget_gpu_h: float | None = None
    budget_warn_fraction: float = 0.8
    borrowing: bool = True  # start above a cap when no other team's (person's) task waits for GPUs
    # Fair share and short-job credits (seconds of waiting a task is moved forward, at most)
    fairshare_half_life_s: float = 7 * 86400.0
    fairshare_max_credit_s: float = 6 * 3600.0
    # each team's fair-share factor shared out among its members by their use (`fairshare_by_member`)
    fairshare_within_teams: bool = True
    short_job_max_credit_s: float = 24 * 3600.0
    short_job_min_gpu_s: float = 300.0  # full credit at or below this size (`credit_size`)
    short_job_max_gpu_s: float = 2.0e6  # no credit at or above
    # the size the short-job credit falls with is estimated run time x GPUs^exponent: 1 ranks by GPU-seconds
    # (shortest first by area: the best mean JCT), 0 by run time alone; below 0 a wide task gets more credit
    # than a narrow one of the same run time, as Slurm's job-size factor favours large jobs. On philly_dev.csv
    # -0.5 starts the wide jobs sooner (utilization up ~2 %) for ~50 % more mean JCT (docs/scheduling.md)
    short_job_width_exponent: float = 1.0
    deadline_credit_s: float = DEFAULT_CLASS_STEP_S
    deadline_lead_s: float = 3600.0  # credit once the latest start is this close
    reservations: int = 1  # EASY: one reservation for the top blocked task
    overdue_reservations: int = 0  # extra reservations for window tasks waiting past their aging bound
    # the window's oldest task by class and age alone (credits aside), when it needs several GPUs and has
    # waited `oldest_first_after_s`, is considered first in each pass: it starts if it fits, else it holds
    # a reservation, so credits cannot keep a wide task behind a stream of small ones (nightshift policy;
    # for fifo and backfill it is the first task anyway). Not at once: with unknown run times (default
    # estimates) its reservation would idle GPUs that backfill would have used well. Sooner where tasks are
    # short: after `oldest_first_after_runs` typical run times, when that is less (`oldest_first_delay_s`).
    oldest_first: bool = True
    oldest_first_after_s: float = 900.0
    oldest_first_after_runs: float = 50.0
    # observed, not configured: the median run time of the cluster's recent GPU tasks, which the caller sets
    # from its history before each pass (`estimate.with_typical_run`); None until enough tasks finished
    typical_run_s: float | None = None
    # Time windows, tariff, power
    offpeak: str = "23:00-07:00"
    timezone: str = "UTC"
    tariff: Tariff = DEFAULT_TARIFF
    gpu_power_w: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_GPU_POWER_W))
    # Estimates
    default_estimate_s: float = 3600.0
    history_runs: int = 9  # median of this many recent runs
    estimate_low_factor: float = 0.5
    estimate_high_factor: float = 1.5
    estimate_horizon_steps: int = 2000
    forecast_overrun_factor: float = 3.0  # forecasts: an overrunning task needs this x its elapsed time more

    def __post_init__(self) -> None:
        if self.policy not in POLICIES:
            raise ValueError(f"unknown policy {self.policy!r}: choose one of {', '.join(POLICIES)}")
        if self.window < 1 or self.window_per_person < 0:
            raise ValueError(
                f"window must be >= 1 and window_per_person >= 0, got {self.window}, {self.window_per_person}"
            )
        if self.class_step_s < 0 or self.fairshare_half_life_s <= 0:
            raise ValueError("class_step_s must be >= 0 and fairshare_half_life_s > 0")
        if not 0 < self.budget_warn_fraction <= 1:
            raise ValueError(f"budget_warn_fraction must be in (0, 1], got {self.budget_warn_fraction}")
        if self.default_estimate_s <= 0:
            raise ValueError("default_estimate_s must be > 0")
        if not -2.0 <= self.short_job_width_exponent <= 2.0:
            got = self.short_job_width_exponent
            raise ValueError(f"short_job_width_exponent must be in [-2, 2], got {got}")
        if self.oldest_first_after_s < 0 or self.oldest_first_after_runs < 0:
            raise ValueError("oldest_first_after_s and oldest_first_after_runs must be >= 0")
        zone(self.timezone)
        parse_windows(self.offpeak)

    @property
    def offpeak_windows(self) -> tuple[DailyWindow, ...]:
        """The parsed off-peak windows."""
        return _parse_cached(self.offpeak)

    def team_cap(self, team: str) -> int | None:
        """The concurrent GPU cap of `team` (None = no cap)."""
        return self.team_gpu_caps.get(team, self.default_team_gpu_cap)

    def user_cap(self, user: str) -> int | None:
        """The concurrent GPU cap of one person (None = no cap), as Slurm's `MaxTRESPerUser`."""
        return self.user_gpu_caps.get(user, self.default_user_gpu_cap)

    @property
    def team_capped(self) -> bool:
        """True when any team has a concurrent GPU cap (a pass then counts each team's GPUs in use)."""
        return bool(self.team_gpu_caps) or self.default_team_gpu_cap is not None

    @property
    def user_capped(self) -> bool:
        """True when any person has a concurrent GPU cap (a pass then counts each person's GPUs in use)."""
        return bool(self.user_gpu_caps) or self.default_user_gpu_cap is not None

    def oldest_first_delay_s(self) -> float:
        """How long the oldest wide task waits before it goes first: `oldest_first_after_s`, or
        `oldest_first_after_runs` typical run times where tasks are short enough that this comes sooner."""
        if self.typical_run_s is None:
            return self.oldest_first_after_s
        return min(self.oldest_first_after_s, self.oldest_first_after_runs * self.typical_run_s)

    @property
    def credits_on(self) -> bool:
        """True when short-job, fair-share and deadline credits apply (the `nightshift` policy)."""
        return self.policy == "nightshift"

    @property
    def has_budgets(self) -> bool:
        """True when any team or person has a day or week GPU-hour budget (else no budget is ever checked)."""
        return bool(self.day_budget_gpu_h or self.week_budget_gpu_h) or self.has_user_budgets

    @property
    def has_user_budgets(self) -> bool:
        """True when any person has a day or week GPU-hour budget of their own."""
        return bool(self.user_day_budget_gpu_h or self.user_week_budget_gpu_h) or (
            self.default_user_day_budget_gpu_h is not None or self.default_user_week_budget_gpu_h is not None
        )

    def team_budgets(self, team: str) -> Budgets:
        """The day and week GPU-hour budgets of `team` (None: no such budget)."""
        return Budgets(self.day_budget_gpu_h.get(team), self.week_budget_gpu_h.get(team))

    def user_budgets(self, user: str) -> Budgets:
        """A person's own day and week GPU-hour budgets, as Slurm's per-user `GrpTRESMins` (None: none)."""
        return Budgets(
            self.user_day_budget_gpu_h.get(user, self.default_user_day_budget_gpu_h),
            self.user_week_budget_gpu_h.get(user, self.default_user_week_budget_gpu_h),
        )

    def max_credit_s(self) -> float:
        """The most a task can be moved forward by credits (0 for fifo/backfill)."""
        if not self.credits_on:
            return 0.0
        return self.short_job_max_credit_s + self.fairshare_max_credit_s + self.deadline_credit_s


_WINDOW_CACHE: dict[str, tuple[DailyWindow, ...]] = {}


def _parse_cached(text: str) -> tuple[DailyWindow, ...]:
    if text not in _WINDOW_CACHE:
        _WINDOW_CACHE[text] = parse_windows(text)
    return _WINDOW_CACHE[text]
