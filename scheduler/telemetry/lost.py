"""The usage of an attempt that died with its worker (kill -9, a crashed machine), which metered nothing.

A worker meters each attempt in memory and stores its usage when the job's processes are gone
(`WorkerTelemetry.jobs_ending`). When the worker itself dies, that meter dies with it: the attempt is
requeued (`lost_worker`) by the restarted worker or by the scheduler once its lease runs out, and its
GPU-hours, energy and cost would be missing from `nightshift show`, the report's kWh and cost and `/metrics`,
while quotas (which read the attempts) count it. `account_lost_attempt` stores it then, from the attempt's
own start and end, with the energy of its GPU models (estimated: no reading of it survived).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from sqlalchemy import select

from scheduler.clock import to_epoch_s
from scheduler.policy.windows import parse_windows
from scheduler.store.tables import Attempt, Task, TaskUsage
from scheduler.telemetry.accounting import AttemptUsage, UsageMeter
from scheduler.telemetry.store import TelemetryStore

if TYPE_CHECKING:
    from scheduler.service import Cluster

log = logging.getLogger(__name__)


def _gpu_models(cluster: Cluster, node: str) -> dict[int, str]:
    """The GPU models of `node` by index, as its worker last published them (empty when unknown)."""
    try:
        nodes = cluster.nodes.all()
    except Exception:  # Redis away: the estimate falls back to a default power
        return {}
    return {gpu.index: gpu.name for state in nodes if state.name == node for gpu in state.gpus}


def account_lost_attempt(cluster: Cluster, task_id: int, token: str) -> AttemptUsage | None:
    """Store the usage of the ended attempt of `task_id` that held `token`, unless its worker stored one.

    Returns what was stored, or None (no such ended attempt, or it has its usage already). Never raises:
    accounting is no reason to leave a lost task unsettled.
    """
    try:
        with cluster.factory() as session:
            attempt = session.scalars(
                select(Attempt).where(Attempt.task_id == task_id, Attempt.token == token)
            ).first()
            if attempt is None or attempt.finished_at is None:
                return None
            stored = session.scalars(
                select(TaskUsage.id).where(TaskUsage.task_id == task_id, TaskUsage.attempt == attempt.number)
            ).first()
            task = session.get(Task, task_id)
            if stored is not None or task is None:
                return None
            number, node, indices = attempt.number, attempt.node, list(attempt.gpu_indices or [])
            started_s, finished_s = to_epoch_s(attempt.started_at), to_epoch_s(attempt.finished_at)
            requested = int(task.gpu_memory_gb * 1024) if task.gpu_memory_gb else None
        config = cluster.policy_config
        meter = UsageMeter(
            node, config.tariff, parse_windows(config.offpeak), config.timezone, config.gpu_power_w
        )
        meter.begin(task_id, number, indices, started_s, requested, _gpu_models(cluster, node))
        usage = meter.end(task_id, finished_s)
        if usage is not None:
            TelemetryStore(cluster.factory).save_usage(usage)
        return usage
    except Exception:
        log.exception("task %s: could not store the usage of its lost attempt", task_id)
        return None
