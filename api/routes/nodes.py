"""/api/v1/nodes: the worker nodes, and (admins) draining one so it takes no new tasks."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from api.deps import AdminDep, ClusterDep, IdentityDep
from api.schemas import NodeDrainedPublic, NodePublic
from scheduler.clock import now_ms
from scheduler.errors import NotFoundError
from scheduler.nodes import NodeState

router = APIRouter(prefix="/nodes", tags=["nodes"])


def node_public(node: NodeState, now: int) -> NodePublic:
    """A node as the API shows it."""
    return NodePublic(
        name=node.name,
        alive=node.alive(now),
        drained=node.drained,
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


def _set_drained(cluster: ClusterDep, name: str, drained: bool) -> NodePublic:
    if not cluster.nodes.set_drained(name, drained):
        raise NotFoundError(f"node {name!r} not found; `nightshift nodes` lists them")
    node = next(node for node in cluster.nodes.all() if node.name == name)
    return node_public(node, now_ms())


@router.post("/{name}/drain", response_model=NodeDrainedPublic)
def drain(
    name: str,
    cluster: ClusterDep,
    who: AdminDep,
    requeue: Annotated[
        bool,
        Query(description="true: also stop the tasks running there and queue them again (to reboot it now)"),
    ] = False,
) -> NodeDrainedPublic:
    """Stop giving the node new tasks; the ones running there finish, or with `requeue=true` are stopped
    (their stop signal and grace) and queued again with their age, to start elsewhere (`requeued`)."""
    node = _set_drained(cluster, name, True)
    requeued = cluster.requeue_node(who, name) if requeue else []
    return NodeDrainedPublic(**node.model_dump(), requeued=requeued)


@router.post("/{name}/undrain", response_model=NodePublic)
def undrain(name: str, cluster: ClusterDep, who: AdminDep) -> NodePublic:
    """Put a drained node back in service."""
    return _set_drained(cluster, name, False)
