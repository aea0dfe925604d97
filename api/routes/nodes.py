"""/api/v1/nodes: the worker nodes, and (admins) draining one so it takes no new tasks."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Query

from api.deps import AdminDep, ClusterDep, IdentityDep
from api.schemas import NodeDrainedPublic, NodePublic, NodeReservedPublic, TeamReservationPublic
from scheduler.clock import from_epoch_s, now_ms, now_s, to_epoch_s
from scheduler.errors import NotFoundError, SpecError
from scheduler.nodes import NodeState, TeamReservation
from scheduler.policy.windows import zone
from scheduler.repeats import Repeat
from scheduler.store.identity import team_id_by_name

router = APIRouter(prefix="/nodes", tags=["nodes"])


def node_public(node: NodeState, now: int) -> NodePublic:
    """A node as the API shows it."""
    window = node.maintenance(now)
    start, end = window if window is not None else (None, None)
    return NodePublic(
        name=node.name,
        alive=node.alive(now),
        drained=node.drained_at(now),
        drain_at=None if start is None else from_epoch_s(start / 1000.0),
        drain_until=None if end is None else from_epoch_s(end / 1000.0),
        drain_repeat=node.drain_repeat if window is not None else None,
        stopped_at=None if node.stopped_ms is None else from_epoch_s(node.stopped_ms / 1000.0),
        reservations=[_reservation_public(held) for held in node.next_reservations(now)],
        source=node.source,
        heartbeat_age_s=round((now - node.heartbeat_ms) / 1000, 1),
        gpus=len(node.gpus),
        labels=node.labels,
        job_isolation=node.job_isolation,
    )


def _reservation_public(held: TeamReservation) -> TeamReservationPublic:
    """A reservation for a team (at its current or next time) as the API shows it."""
    return TeamReservationPublic(
        team=held.team,
        start=from_epoch_s(held.start_ms / 1000),
        end=from_epoch_s(held.end_ms / 1000),
        repeat=held.repeat,
        gpus=list(held.gpus) or None,
    )


@router.get("", response_model=list[NodePublic])
def list_nodes(cluster: ClusterDep, who: IdentityDep) -> list[NodePublic]:
    """Every node that ever registered: alive or not, drained or not."""
    now = now_ms()
    return [node_public(node, now) for node in cluster.nodes.all()]


def _unknown(name: str) -> NotFoundError:
    return NotFoundError(f"node {name!r} not found; `nightshift nodes` lists them")


def _shown(cluster: ClusterDep, name: str) -> NodePublic:
    """The node `name` (known to exist) as the API shows it now."""
    return node_public(next(node for node in cluster.nodes.all() if node.name == name), now_ms())


def _set_drained(cluster: ClusterDep, name: str, drained: bool) -> NodePublic:
    if not cluster.set_node_drained(name, drained):
        raise _unknown(name)
    return _shown(cluster, name)


@router.post("/{name}/drain", response_model=NodeDrainedPublic)
def drain(
    name: str,
    cluster: ClusterDep,
    who: AdminDep,
    requeue: Annotated[
        bool,
        Query(
            description="true: also stop the tasks running there and queue them again (to reboot it now; "
            "with `at`, those still running then)"
        ),
    ] = False,
    at: Annotated[
        datetime | None,
        Query(
            description="drain it from then on (maintenance; ISO 8601, naive in the cluster's zone): until "
            "then only tasks that end by then, by their estimate, start there"
        ),
    ] = None,
    until: Annotated[
        datetime | None,
        Query(
            description="the maintenance ends then and the node is back in service by itself (ISO 8601, "
            "naive in the cluster's zone); without `at` it is drained from now"
        ),
    ] = None,
    repeat: Annotated[
        Repeat | None,
        Query(
            description="with `until`: the maintenance comes round again at the same time every day, working "
            "day, weekend day or week, in the cluster's zone, until undrained (with `requeue`, each time)"
        ),
    ] = None,
) -> NodeDrainedPublic:
    """Stop giving the node new tasks; the ones running there finish, or with `requeue=true` are stopped
    (their stop signal and grace) and queued again with their age, to start elsewhere (`requeued`). With
    `at`, from that time on (Slurm's maintenance reservation): until then a task starts there only if its
    estimate (else its time limit) ends it first, and no task is promised GPUs there; `running_past` names
    the tasks running there now that are expected to run past it, which `requeue=true` sends back to the
    queue then. With `until`, the node takes tasks again from then on (no `undrain` needed), and the wait
    forecasts count on it. With `repeat` too, it comes round again (a weekly patch window), until
    `undrain`."""
    if at is None and until is None and repeat is not None:
        raise SpecError(
            "a repeating maintenance needs an end (`until`): the node comes back by itself each time",
            [{"field": "until", "message": "required with repeat"}],
        )
    if at is None and until is None:
        node = _set_drained(cluster, name, True)
        requeued = cluster.requeue_node(who, name) if requeue else []
        return NodeDrainedPublic(**node.model_dump(), requeued=requeued)
    timezone = cluster.policy_config.timezone
    start_s = now_s() if at is None else _future_s(at, timezone, "at", "drop `at` to drain the node now")
    end_s = None if until is None else _ends_after(until, timezone, start_s)
    past = cluster.drain_later(who, name, start_s, requeue and at is not None, end_s, repeat)
    if past is None:
        raise _unknown(name)
    requeued = cluster.requeue_node(who, name) if requeue and at is None else []
    public = _shown(cluster, name).model_dump()
    return NodeDrainedPublic(**public, requeued=requeued, running_past=past if at is not None else [])


def _ends_after(until: datetime, timezone: str, start_s: float) -> float:
    """`until` in seconds since the epoch, checked to come after `start_s` (and so after now)."""
    end_s = _future_s(until, timezone, "until", "give a time to come")
    if end_s <= start_s:
        raise SpecError(
            "`until` must come after `at`: it ends after it starts",
            [{"field": "until", "message": "a time after `at`"}],
        )
    return end_s


def _future_s(moment: datetime, timezone: str, field: str, what_to_do: str) -> float:
    """`moment` in seconds since the epoch (naive: in the cluster's zone), checked to be in the future."""
    moment = moment.replace(tzinfo=zone(timezone)) if moment.tzinfo is None else moment
    if to_epoch_s(moment) <= now_s():
        raise SpecError(
            f"{moment.isoformat()} has passed: {what_to_do}",
            [{"field": field, "message": "a time in the future"}],
        )
    return to_epoch_s(moment)


@router.post("/{name}/undrain", response_model=NodePublic)
def undrain(name: str, cluster: ClusterDep, who: AdminDep) -> NodePublic:
    """Put a drained node back in service (a drain set for later is cleared too)."""
    return _set_drained(cluster, name, False)


@router.post("/{name}/reserve", response_model=NodeReservedPublic)
def reserve(
    name: str,
    cluster: ClusterDep,
    who: AdminDep,
    team: Annotated[str, Query(min_length=1, max_length=64, description="the team the node is kept for")],
    until: Annotated[
        datetime, Query(description="the reservation ends then (ISO 8601, naive in the cluster's zone)")
    ],
    at: Annotated[
        datetime | None, Query(description="it starts then (ISO 8601, naive in the cluster's zone); else now")
    ] = None,
    repeat: Annotated[
        Repeat | None,
        Query(
            description="it comes round again at the same time every day, working day (Monday to Friday), "
            "weekend day or week, in the cluster's zone, until called off; `at`..`until` is its first time"
        ),
    ] = None,
    gpus: Annotated[
        int | None,
        Query(
            ge=1,
            le=1024,
            description="only this many of its GPUs (the highest-numbered free of other reservations then); "
            "else all of them",
        ),
    ] = None,
) -> NodeReservedPublic:
    """Keep the node's GPUs for one team from `at` (else now) to `until` (Slurm's reservation for an
    account: a paper deadline, a demo): then only that team's tasks start there; before it, another team's
    task starts there only if its estimate (else its time limit) ends it first, and none is promised GPUs
    there; the team's own tasks may use it at any time, elsewhere as usual. Nothing running is stopped:
    `running_past` names the other teams' tasks expected to run past its start. A node may be reserved for
    several teams one after the other; one overlapping another is refused (409), naming it. With `repeat`
    (Slurm's DAILY, WEEKDAY, WEEKEND, WEEKLY flags) it holds the node at that time each day or week: a lab's
    class every Tuesday afternoon. With `gpus`, only that many of its GPUs are kept (the rest stay
    everyone's), and two teams may hold different GPUs of one node at once."""
    if team_id_by_name(cluster.factory, team) is None:
        raise SpecError(
            f"no team named {team!r}: a team exists once a token names it (`nightshift token create --team`)",
            [{"field": "team", "message": "an existing team"}],
        )
    timezone = cluster.policy_config.timezone
    start_s = now_s() if at is None else _future_s(at, timezone, "at", "drop `at` to reserve it from now")
    end_s = _ends_after(until, timezone, start_s)
    made = cluster.reserve_node(who, name, team, start_s, end_s, repeat, gpus)
    if made is None:
        raise _unknown(name)
    written, past = made
    shown = written.next_time(now_ms())
    return NodeReservedPublic(
        **_shown(cluster, name).model_dump(),
        running_past=past,
        reserved=None if shown is None else _reservation_public(shown),
    )


@router.post("/{name}/unreserve", response_model=NodePublic)
def unreserve(
    name: str,
    cluster: ClusterDep,
    who: AdminDep,
    team: Annotated[
        str | None, Query(max_length=64, description="only this team's; else every team's")
    ] = None,
) -> NodePublic:
    """Call off the node's reservations for `team` (else all of them)."""
    if not cluster.unreserve_node(name, team):
        raise _unknown(name)
    return _shown(cluster, name)
