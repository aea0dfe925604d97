"""/api/v1/nodes: the worker nodes, and (admins) draining one so it takes no new tasks."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Query

from api.deps import AdminDep, ClusterDep, IdentityDep
from api.schemas import NodeDrainedPublic, NodePublic
from scheduler.clock import from_epoch_s, now_ms, now_s, to_epoch_s
from scheduler.errors import NotFoundError, SpecError
from scheduler.nodes import NodeState
from scheduler.policy.windows import zone

router = APIRouter(prefix="/nodes", tags=["nodes"])


def node_public(node: NodeState, now: int) -> NodePublic:
    """A node as the API shows it."""
    return NodePublic(
        name=node.name,
        alive=node.alive(now),
        drained=node.drained_at(now),
        drain_at=None if node.drain_at_ms is None else from_epoch_s(node.drain_at_ms / 1000.0),
        source=node.source,
        heartbeat_age_s=round((now - node.heartbeat_ms) / 1000, 1),
        gpus=len(node.gpus),
        labels=node.labels,
        job_isolation=node.job_isolation,
    )


@router.get("", response_model=list[NodePublic])
def list_nodes(cluster: ClusterDep, who: IdentityDep) -> list[NodePublic]:
    """Every node that ever registered: alive or not, drained or not."""
    now = now_ms()
    return [node_public(node, now) for node in cluster.nodes.all()]


def _unknown(name: str) -> NotFoundError:
    return NotFoundError(f"node {name!r} not found; `nightshift nodes` lists them")


def _set_drained(cluster: ClusterDep, name: str, drained: bool) -> NodePublic:
    if not cluster.nodes.set_drained(name, drained):
        raise _unknown(name)
    node = next(node for node in cluster.nodes.all() if node.name == name)
    return node_public(node, now_ms())


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
) -> NodeDrainedPublic:
    """Stop giving the node new tasks; the ones running there finish, or with `requeue=true` are stopped
    (their stop signal and grace) and queued again with their age, to start elsewhere (`requeued`). With
    `at`, from that time on (Slurm's maintenance reservation): until then a task starts there only if its
    estimate (else its time limit) ends it first, and no task is promised GPUs there; `running_past` names
    the tasks running there now that are expected to run past it, which `requeue=true` sends back to the
    queue then."""
    if at is None:
        node = _set_drained(cluster, name, True)
        requeued = cluster.requeue_node(who, name) if requeue else []
        return NodeDrainedPublic(**node.model_dump(), requeued=requeued)
    past = cluster.drain_later(who, name, _maintenance_s(at, cluster.policy_config.timezone), requeue)
    if past is None:
        raise _unknown(name)
    node = next(node for node in cluster.nodes.all() if node.name == name)
    return NodeDrainedPublic(**node_public(node, now_ms()).model_dump(), running_past=past)


def _maintenance_s(at: datetime, timezone: str) -> float:
    """`at` in seconds since the epoch (naive: in the cluster's zone), checked to be in the future."""
    moment = at.replace(tzinfo=zone(timezone)) if at.tzinfo is None else at
    if to_epoch_s(moment) <= now_s():
        raise SpecError(
            f"{moment.isoformat()} has passed: drop `at` to drain the node now",
            [{"field": "at", "message": "a time in the future"}],
        )
    return to_epoch_s(moment)


@router.post("/{name}/undrain", response_model=NodePublic)
def undrain(name: str, cluster: ClusterDep, who: AdminDep) -> NodePublic:
    """Put a drained node back in service (a drain set for later is cleared too)."""
    return _set_drained(cluster, name, False)
