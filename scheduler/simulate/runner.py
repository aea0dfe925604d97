"""Run a trace through `decide` on a virtual clock (`Replay`) and measure what happened."""

from __future__ import annotations

import math
import re
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from scheduler.policy.config import POLICIES, PolicyConfig
from scheduler.policy.estimate import DurationHistory, estimate_duration_s, with_typical_run
from scheduler.policy.placement import Pool
from scheduler.policy.quotas import gpu_weight
from scheduler.policy.replay import Replay
from scheduler.policy.tariff import estimate_cost, estimate_energy_kwh, gpu_power_w
from scheduler.policy.types import MIB_PER_GB, GpuSlot, QueuedTask, RunningTask
from scheduler.simulate.metrics import LeftOut, SimulationResult, percentile, team_metrics
from scheduler.simulate.trace import TraceError, TraceJob, read_trace
from scheduler.simulate.usage import UsageTracker

_SPEC = re.compile(r"^\s*(\d+)\s*x\s*(\d+(?:\.\d+)?)\s*$")

# Called at each submit with (replay, job, task); used by the wait-estimate benchmark.
SubmitProbe = Callable[[Replay, TraceJob, QueuedTask], None]


def parse_gpus_spec(spec: str) -> list[int]:
    """`"8x24"` -> eight GPUs of 24 GB; `"2x80,2x24"` -> four GPUs; returns memory per GPU in MiB."""
    sizes: list[int] = []
    for part in spec.split(","):
        m = _SPEC.match(part)
        if not m or int(m.group(1)) < 1:
            raise TraceError(
                f"bad GPU spec {part.strip()!r} in {spec!r}: expected COUNTxGB, e.g. 8x24 or 2x80,2x24"
            )
        sizes += [round(float(m.group(2)) * MIB_PER_GB)] * int(m.group(1))
    return sizes


def _cluster(gpus_spec: str, nodes: int) -> list[GpuSlot]:
    if nodes < 1:
        raise TraceError(f"--nodes must be >= 1, got {nodes}")
    sizes = parse_gpus_spec(gpus_spec)
    width = len(str(nodes - 1))
    return [GpuSlot(f"node-{n:0{width}d}", i, mib, mib) for n in range(nodes) for i, mib in enumerate(sizes)]


def _gb(mib: int) -> str:
    return f"{mib / MIB_PER_GB:g} GB"


def why_never_fits(job: TraceJob, gpus: Sequence[GpuSlot]) -> str | None:
    """Why `job` could not start even on the empty simulated cluster (None when it could): it would wait
    forever, and the replay would end with it still queued."""
    if Pool(gpus).find(_task(job)) is not None:
        return None
    largest = max((g.memory_total_mib for g in gpus), default=0)
    if job.gpu_memory_mib > largest:
        return f"needs {_gb(job.gpu_memory_mib)} per GPU, the largest GPU has {_gb(largest)}"
    if job.gpus > len(gpus):
        return f"needs {job.gpus} GPUs, the cluster has {len(gpus)}"
    memory = f" with {_gb(job.gpu_memory_mib)} each" if job.gpu_memory_mib else ""
    return f"needs {job.gpus} GPUs{memory} on one node (or on whole nodes), and no node has them"


def cluster_that_fits(jobs: Sequence[TraceJob], gpus_spec: str, nodes: int) -> str:
    """`--gpus ... --nodes ...`: a cluster like this one on which every one of `jobs` could start (the same
    GPUs per node, more nodes, and GPUs as large as the largest memory asked for)."""
    sizes = parse_gpus_spec(gpus_spec)
    need_mib = max((j.gpu_memory_mib for j in jobs), default=0)
    spec = gpus_spec
    if need_mib > min(sizes):
        gb = max(math.ceil(need_mib / MIB_PER_GB), math.ceil(max(sizes) / MIB_PER_GB))
        spec = f"{len(sizes)}x{gb}"
    count = max(nodes, math.ceil(max((j.gpus for j in jobs), default=1) / len(sizes)))
    return f"--gpus {spec} --nodes {count}"


def _task(job: TraceJob) -> QueuedTask:
    return QueuedTask(
        task_id=job.index,
        team=job.team,
        user=job.user,
        gpus=job.gpus,
        enqueued_at_s=job.submit_s,
        priority=job.priority,
        gpu_memory_mib=job.gpu_memory_mib,
        gpu_fraction=job.gpu_fraction,
        estimated_s=job.estimated_s,
        deadline_s=job.deadline_s,
        offpeak=job.offpeak,
    )


def run_simulation(
    trace_path: str | Path,
    gpus_spec: str,
    nodes: int,
    policy: str = "nightshift",
    oracle: bool = False,
    config: PolicyConfig | None = None,
    *,
    epoch_s: float = 0.0,
    probe: SubmitProbe | None = None,
) -> SimulationResult:
    """Replay the trace at `trace_path` on `nodes` nodes of `gpus_spec` GPUs with `policy`.

    Without `oracle` the policy sees only the trace's `estimated_duration_s` or what it learns from finished
    jobs of the same user (the team when the trace has none) and size. `epoch_s` maps trace time 0 to a
    wall time (for off-peak windows and the tariff).
    """
    return simulate_jobs(
        read_trace(trace_path), gpus_spec, nodes, policy, oracle, config, epoch_s=epoch_s, probe=probe
    )


def simulate_jobs(
    jobs: Sequence[TraceJob],
    gpus_spec: str,
    nodes: int,
    policy: str = "nightshift",
    oracle: bool = False,
    config: PolicyConfig | None = None,
    *,
    epoch_s: float = 0.0,
    probe: SubmitProbe | None = None,
) -> SimulationResult:
    """`run_simulation` on jobs already read."""
    if policy not in POLICIES:
        raise TraceError(f"unknown policy {policy!r}: choose one of {', '.join(POLICIES)}")
    wall0 = time.perf_counter()
    base = config or PolicyConfig()
    cfg = replace(base, policy=policy)
    gpus = _cluster(gpus_spec, nodes)
    shapes: dict[tuple[int, int, float], str | None] = {}  # what fitting depends on: checked once each
    for j in jobs:
        shape = (j.gpus, j.gpu_memory_mib, j.gpu_fraction)
        if shape not in shapes:
            shapes[shape] = why_never_fits(j, gpus)
    why = {j.index: shapes[(j.gpus, j.gpu_memory_mib, j.gpu_fraction)] for j in jobs}
    never = [j for j in jobs if why[j.index] is not None]
    jobs = [j for j in jobs if why[j.index] is None]  # the replay would end with the others still queued
    by_id = {j.index: j for j in jobs}
    history = DurationHistory(cfg.history_runs)
    tracker = UsageTracker(cfg.fairshare_half_life_s, rolling=cfg.has_budgets, config=cfg)
    sim = Replay(
        gpus,
        cfg,
        lambda t: by_id[t.task_id].duration_s,
        tracker.snapshot if cfg.credits_on or tracker.rolling else None,
    )

    placements: dict[int, tuple[tuple[str, tuple[int, ...]], ...]] = {}

    def on_start(task: QueuedTask, at_s: float, parts: tuple[RunningTask, ...]) -> None:
        placements[task.task_id] = tuple((p.node, p.gpu_indices) for p in parts)
        held = gpu_weight(task.gpus, task.gpu_fraction)
        tracker.started(task.task_id, task.team, held, at_s, parts[0], user=task.user)

    def on_end(task: QueuedTask, start_s: float, end_s: float) -> None:
        tracker.ended(task.task_id, end_s)
        history.add(task.user, task.name, task.gpus, end_s - start_s)
        sim.config = with_typical_run(sim.config, history.typical_s())

    sim.on_start, sim.on_end = on_start, on_end
    arrivals = sorted(jobs, key=lambda j: (j.submit_s, j.index))
    _feed(sim, arrivals, history, cfg, oracle, epoch_s, probe)
    result = _measure(policy, jobs, gpus, sim, cfg, epoch_s, time.perf_counter() - wall0)
    result.placements = placements
    result.left_out = [LeftOut(j.index, j.job_id, why[j.index] or "") for j in never]
    result.would_fit = cluster_that_fits(never, gpus_spec, nodes) if never else None
    return result


def _feed(
    sim: Replay,
    arrivals: Sequence[TraceJob],
    history: DurationHistory,
    cfg: PolicyConfig,
    oracle: bool,
    epoch_s: float,
    probe: SubmitProbe | None,
) -> None:
    """Submit each job when the clock reaches it, with the estimate known at that moment."""
    i = 0
    while i < len(arrivals):
        at_s = arrivals[i].submit_s
        sim.run(until_s=epoch_s + at_s)
        while i < len(arrivals) and arrivals[i].submit_s == at_s:
            job = arrivals[i]
            raw = replace(_task(job), enqueued_at_s=epoch_s + job.submit_s)
            est = job.duration_s if oracle else estimate_duration_s(raw, history, cfg).seconds
            task = replace(
                raw, estimated_s=est, deadline_s=None if job.deadline_s is None else epoch_s + job.deadline_s
            )
            if probe is not None:
                probe(sim, job, task)
            sim.submit(task)
            i += 1
    sim.run()


def _measure(
    policy: str,
    jobs: Sequence[TraceJob],
    gpus: Sequence[GpuSlot],
    sim: Replay,
    cfg: PolicyConfig,
    epoch_s: float,
    wall_s: float,
) -> SimulationResult:
    """The brief's metrics from the replay's start and end times."""
    done = [j for j in jobs if j.index in sim.ended_at]
    waits = sorted(sim.started_at[j.index] - (epoch_s + j.submit_s) for j in done)
    jcts = [sim.ended_at[j.index] - (epoch_s + j.submit_s) for j in done]
    first_s = epoch_s + min((j.submit_s for j in jobs), default=0.0)
    makespan_s = max((sim.ended_at[j.index] for j in done), default=first_s) - first_s
    busy_gpu_s = sum(j.gpus * min(j.gpu_fraction, 1.0) * j.duration_s for j in done)
    power_w = gpu_power_w(gpus[0].model if gpus else "", None, cfg.gpu_power_w)
    kwh = cost = 0.0
    for j in done:
        e = estimate_energy_kwh(j.gpus, power_w * min(j.gpu_fraction, 1.0), j.duration_s)
        kwh += e
        cost += estimate_cost(sim.started_at[j.index], sim.ended_at[j.index], e, cfg.tariff)
    teams: dict[str, tuple[list[float], list[float], list[float]]] = {}
    users: dict[str, tuple[list[float], list[float], list[float]]] = {}
    for j in done:
        for key, groups in ((j.team, teams), (j.user or j.team, users)):
            w, c, g = groups.setdefault(key, ([], [], []))
            w.append(sim.started_at[j.index] - (epoch_s + j.submit_s))
            c.append(sim.ended_at[j.index] - (epoch_s + j.submit_s))
            g.append(j.gpus * j.duration_s)
    # people only where some team has several (a trace naming none has one per team: its team again)
    several = len({(j.team, j.user) for j in done if j.user}) > len({j.team for j in done if j.user})
    return SimulationResult(
        policy=policy,
        jobs=len(jobs),
        gpus=len(gpus),
        mean_jct_s=statistics.fmean(jcts) if jcts else 0.0,
        mean_wait_s=statistics.fmean(waits) if waits else 0.0,
        p50_wait_s=percentile(waits, 50),
        p95_wait_s=percentile(waits, 95),
        p99_wait_s=percentile(waits, 99),
        max_wait_s=waits[-1] if waits else 0.0,
        makespan_s=makespan_s,
        utilization=busy_gpu_s / (len(gpus) * makespan_s) if makespan_s > 0 and gpus else 0.0,
        lower_bound_mean_jct_s=statistics.fmean(j.duration_s for j in jobs) if jobs else 0.0,
        per_team={t: team_metrics(w, c, sum(g)) for t, (w, c, g) in sorted(teams.items())},
        per_user={u: team_metrics(w, c, sum(g)) for u, (w, c, g) in sorted(users.items())} if several else {},
        energy_kwh=kwh,
        energy_cost=cost,
        wall_s=wall_s,
        starts_s={j.index: sim.started_at[j.index] - epoch_s for j in done},
    )
