"""One scheduling core, two clocks: the live scheduler and `nightshift simulate` make the same decisions.

A small scenario (11 tasks of 1, 2 and 4 GPUs, four priority classes, two teams, a 3-GPU cap on team
vision with borrowing, memory requests that need the 80 GB cards) runs through the simulator on two nodes
of `2x80,2x24`, and through the live path: real Redis and SQLite, `Cluster.submit`, `Dispatcher.run_pass`,
claims and completions as a worker makes them (without running processes). The live side completes tasks in
the order the simulator ended them; after each group of completions one dispatcher pass runs, as the
simulator runs one `decide` pass per instant. Both must start the same tasks at the same step, on the same
nodes and GPUs.

The durations are seconds and the estimates hours, so on both clocks the time that passes is negligible next
to the estimates and reservations and backfill compare the same quantities. Fair-share credit is off here:
it weighs GPU-seconds actually used, which the live run (milliseconds) cannot reproduce in virtual seconds.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from scheduler.clock import now_ms
from scheduler.dispatcher import Dispatcher
from scheduler.gpus import SimulatedGpus
from scheduler.policy.config import PolicyConfig
from scheduler.policy.types import MIB_PER_GB, PriorityClass
from scheduler.service import Cluster
from scheduler.simulate import TraceJob, simulate_jobs
from scheduler.worker import Worker

NODE_GPUS = "2x80,2x24"
NODES = ("node-0", "node-1")  # the simulator's names for two nodes
TEAMS = {"alice": "vision", "carol": "vision", "bob": "nlp"}


@dataclass(frozen=True)
class Job:
    """One task of the scenario: who, how many GPUs, memory, class, estimate (minutes), duration (s)."""

    user: str
    gpus: int
    priority: str
    estimate_min: float | None
    duration_s: float
    gpu_memory_gb: float | None = None


SCENARIO = [
    Job("alice", 2, "normal", 120, 5),
    Job("bob", 4, "normal", 240, 9),
    Job("alice", 1, "high", 30, 3, gpu_memory_gb=40),
    Job("bob", 1, "low", 10, 2),
    Job("carol", 2, "urgent", 60, 7),
    Job("bob", 4, "high", 600, 4),
    Job("alice", 1, "normal", 15, 6),
    Job("bob", 2, "normal", 90, 8, gpu_memory_gb=30),
    Job("carol", 1, "low", 5, 1),
    Job("bob", 1, "normal", None, 10),
    Job("alice", 4, "low", 45, 11),
]

Placement = tuple[tuple[str, tuple[int, ...]], ...]


def _simulated(config: PolicyConfig) -> tuple[dict[int, tuple[float, Placement]], dict[int, float]]:
    """Start (virtual s) and placement of each job, and when it ended, from `nightshift simulate`'s core."""
    jobs = [
        TraceJob(
            index=i,
            job_id=f"j{i}",
            submit_s=0.0,
            duration_s=job.duration_s,
            gpus=job.gpus,
            team=TEAMS[job.user],
            user=job.user,
            gpu_memory_mib=round((job.gpu_memory_gb or 0) * MIB_PER_GB),
            priority=PriorityClass.parse(job.priority),
            estimated_s=None if job.estimate_min is None else job.estimate_min * 60,
        )
        for i, job in enumerate(SCENARIO)
    ]
    result = simulate_jobs(jobs, NODE_GPUS, len(NODES), config.policy, oracle=False, config=config)
    assert len(result.starts_s) == len(jobs), "the simulator ran every job"
    starts = {i: (result.starts_s[i], result.placements[i]) for i in range(len(jobs))}
    ends = {i: result.starts_s[i] + jobs[i].duration_s for i in range(len(jobs))}
    return starts, ends


class LiveDriver:
    """The live path, stepped by hand: nodes heartbeat, the dispatcher passes, a worker's claim and finish."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.workers = [
            Worker(cluster, node, SimulatedGpus(NODE_GPUS, node=node), base_env=dict(os.environ))
            for node in NODES
        ]
        self.dispatcher = Dispatcher(cluster)
        self.tokens: dict[int, str] = {}

    def dispatch(self) -> dict[int, Placement]:
        """One pass with fresh usage; every task it assigns is claimed and marked running on its node."""
        for worker in self.workers:
            worker.publish_node()
        self.dispatcher.usage.invalidate()
        decisions = self.dispatcher.run_pass()
        started: dict[int, list[tuple[str, tuple[int, ...]]]] = {}
        for start in decisions.starts:
            started.setdefault(start.task_id, []).append((start.node, start.gpu_indices))
        for node in NODES:
            while (claim := self.cluster.queue.claim(node, now_ms(), 60_000)) is not None:
                attempt = self.cluster.tasks.mark_running(claim.task_id, claim.token, node, claim.gpu_indices)
                assert attempt == 1
                self.tokens[claim.task_id] = claim.token
        assert set(started) <= set(self.tokens), "every assigned task was claimed"
        return {task_id: tuple(parts) for task_id, parts in started.items()}

    def finish(self, task_id: int) -> None:
        """The job exited 0: settle it as its worker does (this also releases the lease)."""
        assert self.cluster.settle_attempt(task_id, self.tokens[task_id], "exit", exit_code=0) == "succeeded"


# a window of 2 tasks: each person with none in it has their first task looked at too (`policy.window`),
# read from the member indexes in Redis live and from the simulator's own
SMALL_WINDOW = {"window": 2, "window_per_person": 1}


@pytest.mark.parametrize("window", [{}, SMALL_WINDOW], ids=["window-128", "window-2-with-member-heads"])
def test_the_live_scheduler_starts_the_same_tasks_on_the_same_gpus_as_the_simulator(
    cluster: Cluster, make_identity: Callable[..., tuple[object, str]], tmp_path: Path, window: dict[str, int]
) -> None:
    config = replace(cluster.policy_config, team_gpu_caps={"vision": 3}, fairshare_max_credit_s=0.0, **window)
    cluster.policy_config = config
    if window:  # the member heads change what starts when: without them the same small window differs
        without = replace(config, window_per_person=0)
        assert _simulated(without)[0] != _simulated(config)[0]
    sim_starts, sim_ends = _simulated(config)

    live = LiveDriver(cluster)
    for worker in live.workers:
        worker.publish_node()
    ids: list[int] = []
    for i, job in enumerate(SCENARIO):
        who, _ = make_identity(job.user, TEAMS[job.user])
        spec: dict[str, object] = {
            "command": "true",
            "name": f"job-{i}",
            "gpus": job.gpus,
            "priority": job.priority,
            "workdir": str(tmp_path),
        }
        if job.estimate_min is not None:
            spec["estimated_minutes"] = job.estimate_min
        if job.gpu_memory_gb is not None:
            spec["gpu_memory_gb"] = job.gpu_memory_gb
        ids.append(cluster.submit(who, spec)[0].id)
    index_of = {task_id: i for i, task_id in enumerate(ids)}

    # Steps: step 0 is the pass after all arrivals (virtual time 0); step k the pass after the k-th group
    # of simultaneous ends in the simulator.
    instants = [0.0, *sorted(set(sim_ends.values()))]
    expected = {i: (instants.index(at_s), placement) for i, (at_s, placement) in sim_starts.items()}
    got: dict[int, tuple[int, Placement]] = {}
    for step, at_s in enumerate(instants):
        if step > 0:
            for i in sorted(i for i, end_s in sim_ends.items() if end_s == at_s):
                assert i in got, f"job {i} ends at {at_s} s in the simulator but never started live"
                live.finish(ids[i])
        for task_id, placement in live.dispatch().items():
            got[index_of[task_id]] = (step, placement)

    assert got == expected
    # The scenario is not trivial: starts spread over several passes, and memory decides placement.
    assert len({step for step, _ in expected.values()}) > 3
    assert all(gpu in (0, 1) for _node, gpus in expected[2][1] for gpu in gpus), "40 GB needs an 80 GB card"
    assert {cluster.tasks.get_any(task_id).status for task_id in ids} == {"succeeded"}
