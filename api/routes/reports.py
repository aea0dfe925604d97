"""/api/v1/reports/utilization: GPU-hours, energy, cost and waits by team, user or GPU."""

from __future__ import annotations

from functools import partial
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query

from api.deps import ClusterDep, IdentityDep
from scheduler.clock import now_s
from scheduler.errors import NotFoundError, PermissionDenied
from scheduler.notify.summary import morning_summary
from scheduler.reports import MAX_REPORT_DAYS, utilization_report
from scheduler.service import Cluster
from scheduler.store.identity import Identity, team_id_by_name
from scheduler.task_logs import failure_lines

router = APIRouter(prefix="/reports", tags=["reports"])


@router.get("/utilization")
def utilization(
    cluster: ClusterDep,
    who: IdentityDep,
    days: Annotated[float, Query(gt=0, le=MAX_REPORT_DAYS, allow_inf_nan=False)] = 7,
    by: Literal["team", "user", "gpu"] = "team",
    team: Annotated[
        str | None, Query(max_length=64, description="one team (admins: any; others: theirs)")
    ] = None,
) -> dict[str, Any]:
    """Who used how many GPU-hours over the last `days`; admins see every team (or the one they name),
    others their own: another team's name is refused (403), as `/quota` does."""
    nodes = cluster.nodes.all()
    models = {f"{node.name}:{gpu.index}": gpu.name for node in nodes for gpu in node.gpus}
    capacity = sum(len(node.gpus) for node in nodes)
    node_gpus = {node.name: len(node.gpus) for node in nodes}
    return utilization_report(
        cluster.factory, now_s(), days, by, cluster.policy_config, models, capacity,
        team=_report_team(cluster, who, team), node_gpus=node_gpus,
    )  # fmt: skip


def _report_team(cluster: Cluster, who: Identity, team: str | None) -> str | None:
    """The one team a report covers (None: all, for an admin who named none); PermissionDenied for a member
    naming another team, NotFoundError for an admin naming one that does not exist."""
    if not who.is_admin:
        if team is not None and team != who.team:
            raise PermissionDenied("you can see only your own team's usage")
        return who.team
    if team is not None and team_id_by_name(cluster.factory, team) is None:
        raise NotFoundError(f"team {team!r} not found")
    return team


@router.get("/summary")
def summary(
    cluster: ClusterDep,
    who: IdentityDep,
    hours: Annotated[
        float | None,
        Query(gt=0, le=24 * 31, allow_inf_nan=False, description="look back; default: last night"),
    ] = None,
) -> dict[str, Any]:
    """The morning summary: tasks that ended last night (since 18:00 yesterday), failures and why, cost."""
    now = now_s()
    config = cluster.policy_config
    since = None if hours is None else now - hours * 3600.0
    return morning_summary(
        cluster.factory, now, config.timezone, config.tariff.currency, since_s=since,
        team=None if who.is_admin else who.team, printed=partial(failure_lines, cluster),
    )  # fmt: skip
