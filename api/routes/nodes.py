"""/api/v1/nodes: the worker nodes, and (admins) draining one so it takes no new tasks."""

from __future__ import annotations

from fastapi import APIRouter

from api.deps import AdminDep, ClusterDep, IdentityDep
from api.schemas import NodePublic
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


@router.post("/{name}/drain", response_model=NodePublic)
def drain(name: str, cluster: ClusterDep, who: AdminDep) -> NodePublic:
    """Stop giving the node new tasks; the ones running there finish."""
    return _set_drained(cluster, name, True)


@router.post("/{name}/undrain", response_model=NodePublic)
def undrain(name: str, cluster: ClusterDep, who: AdminDep) -> NodePublic:
    """Put a drained node back in service."""
    return _set_drained(cluster, name, False)
