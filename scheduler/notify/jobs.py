"""The scheduler-side notification jobs (APScheduler): the morning summary and quota warnings.

Run beside the scheduler (one per cluster is enough; a second one would not send twice: every message
is marked sent in Redis first, with `SET NX`). Quota warnings go to a team once per rolling window and
day, when its GPU-hours pass `budget_warn_fraction` of a day or week budget — a warning, never a kill
— and once more when the budget is used up (its new GPU tasks then wait); a person likewise, of their own
budgets.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from functools import partial
from typing import Any

from apscheduler.schedulers.background import BackgroundScheduler  # type: ignore[import-untyped]
from apscheduler.triggers.cron import CronTrigger  # type: ignore[import-untyped]

from scheduler.clock import now_s
from scheduler.notify.events import Event
from scheduler.notify.notifier import Notifier
from scheduler.notify.summary import morning_summary, summary_event
from scheduler.policy.reasons import amount
from scheduler.policy.windows import zone
from scheduler.service import Cluster
from scheduler.task_logs import failure_lines
from scheduler.telemetry.report import member_quota_use, quota_use

log = logging.getLogger(__name__)
QUOTA_CHECK_EVERY_S = 300
MARK_TTL_S = 2 * 86400


class ClusterJobs:
    """Morning summary at `summary_time` (local) and quota checks every 5 minutes."""

    def __init__(self, cluster: Cluster, notifier: Notifier, clock: Callable[[], float] = now_s) -> None:
        self.cluster = cluster
        self.notifier = notifier
        self.clock = clock
        self._scheduler: BackgroundScheduler | None = None

    def start(self) -> ClusterJobs:
        """Start the background jobs; returns self."""
        config = self.cluster.policy_config
        scheduler = BackgroundScheduler(timezone=zone(config.timezone))
        common = {"max_instances": 1, "coalesce": True, "misfire_grace_time": 600}
        when = self.cluster.settings.summary_time.strip()
        if when:
            hour, minute = (int(part) for part in when.split(":", 1))
            scheduler.add_job(
                self.send_summary,
                CronTrigger(hour=hour, minute=minute, timezone=zone(config.timezone)),
                id="summary",
                **common,
            )
        scheduler.add_job(self.check_quotas, "interval", seconds=QUOTA_CHECK_EVERY_S, id="quota", **common)
        scheduler.start()
        self._scheduler = scheduler
        return self

    def stop(self) -> None:
        """Stop the jobs."""
        if self._scheduler is not None:
            self._scheduler.shutdown(wait=False)
            self._scheduler = None

    def _once(self, what: str) -> bool:
        """True the first time `what` is marked (for MARK_TTL_S); False when it was already sent."""
        key = self.cluster.queue.keys.notified(what)
        return bool(self.cluster.queue.client.set(key, "1", nx=True, ex=MARK_TTL_S))

    def send_summary(self) -> list[Event]:
        """Send last night's summary: one per team with a team target, one for the cluster-wide targets."""
        now = self.clock()
        config = self.cluster.policy_config
        day = datetime.fromtimestamp(now, zone(config.timezone)).date().isoformat()
        teams = {t.team for t in self.notifier.targets if t.wants("summary", t.user, t.team)}
        sent = []
        for team in sorted(teams, key=lambda name: name or ""):
            if not self._once(f"summary:{team or '*'}:{day}"):
                continue
            summary = morning_summary(
                self.cluster.factory, now, config.timezone, config.tariff.currency, team=team,
                printed=partial(failure_lines, self.cluster),
            )  # fmt: skip
            event = summary_event(summary, team=team)
            self.notifier.notify(event)
            sent.append(event)
        return sent

    def check_quotas(self) -> list[Event]:
        """Warn each team (each person, of their own budget) past `budget_warn_fraction` of a budget, and
        again when it is used up (each once per window and day)."""
        now = self.clock()
        config = self.cluster.policy_config
        day = datetime.fromtimestamp(now, zone(config.timezone)).date().isoformat()
        sent = []
        rows = quota_use(self.cluster.factory, now, config)
        rows += member_quota_use(self.cluster.factory, now, config)
        for row in rows:
            whose = row["team"] if row.get("user") is None else f"{row['team']}/{row['user']}"
            for window in ("day", "week"):
                share = row[f"{window}_share"]
                if share is None or share < config.budget_warn_fraction:
                    continue
                level = "used_up" if share >= 1 else "warning"
                if not self._once(f"quota:{whose}:{window}:{level}:{day}"):
                    continue
                event = (
                    quota_event(row, window) if row.get("user") is None else member_quota_event(row, window)
                )
                self.notifier.notify(event)
                sent.append(event)
        return sent


def quota_event(row: dict[str, Any], window: str) -> Event:
    """The `quota_warning` for `row` (a `quota_use` row) past its warning share of the `window` budget:
    what the team may expect, which differs once the budget is used up (no new GPU starts)."""
    team = row["team"]
    share, used, budget, period = _budget_facts(row, window)
    text = f"Team {team} used {amount(used)} of its {budget:g} GPU-hour budget over the last {period}"
    text += f" ({share:.0%})"
    if share >= 1:
        title = f"{team}: {window} GPU-hour budget used up ({share:.0%})"
        text += (
            f": no new GPU task of team {team} starts until its use ages out (`nightshift quota` says when). "
            "Running tasks go on; CPU-only tasks still start."
        )
    else:
        title = f"{team}: {share:.0%} of the {window} GPU-hour budget"
        text += ". Tasks keep running; new ones may wait behind other teams'."
    return Event("quota_warning", title, text, team=team, fields={"used_gpu_h": used, "budget_gpu_h": budget})


def _budget_facts(row: dict[str, Any], window: str) -> tuple[float, float, float, str]:
    """Of a quota row's `window` budget: the share used, GPU-hours used, the budget, the period in words."""
    period = "24 hours" if window == "day" else "7 days"
    return row[f"{window}_share"], row[f"{window}_used_gpu_h"], row[f"{window}_budget_gpu_h"], period


def member_quota_event(row: dict[str, Any], window: str) -> Event:
    """The `quota_warning` to a person (a `member_quota_use` row) past their warning share of their own
    `window` budget: only their new GPU tasks in the team wait once it is used up, not their teammates'."""
    team, user = row["team"], row["user"]
    share, used, budget, period = _budget_facts(row, window)
    text = f"{user} used {amount(used)} of their own {budget:g} GPU-hour budget in team {team} over the last"
    text += f" {period} ({share:.0%})"
    if share >= 1:
        title = f"{user} in {team}: own {window} GPU-hour budget used up ({share:.0%})"
        text += (
            f": no new GPU task of {user} in team {team} starts until their use ages out (`nightshift quota` "
            "says when). Running tasks go on; CPU-only tasks and teammates' tasks still start."
        )
    else:
        title = f"{user} in {team}: {share:.0%} of their own {window} GPU-hour budget"
        text += ". Tasks keep running; new ones start as before until the budget is used up."
    fields = {"used_gpu_h": used, "budget_gpu_h": budget}
    return Event("quota_warning", title, text, user=user, team=team, fields=fields)
