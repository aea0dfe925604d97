"""Cost of one dispatch decision (`Dispatcher.run_pass`: Redis head, SQL rows, policy, assign) vs depth.

In-process, against a private redis-server and SQLite in a temp folder. 20 teams; queued rows inserted in
bulk (SQLAlchemy core) and ZADDed in pipelines (no API). 4 nodes x 8 simulated GPUs, plus 5,000 finished
tasks of history (fair share and learned run times read them). Two scenarios at 1k, 10k and 100k queued:
- busy: every GPU held by a running task, so a pass decides that nothing can start;
- mix:  30 of 32 GPUs held; each pass starts what fits (assign.lua), then the bench undoes the starts so
        every pass sees the same state.
`policy_only_busy_ms`: the policy's decision alone (`decide` on a gathered state, no Redis/SQL).
Also: the once-a-minute safety work (Redis-vs-SQL check, lease reaper, usage refresh) at each depth.
Targets: 100k p99 < 5 ms and within 3x of the 1k figure. Prints one JSON line.

Usage: python bench/decision_cost.py [--passes 300] [--depths 1000,10000,100000]
"""

from __future__ import annotations

import argparse
import os
import random
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from _harness import emit, machine, pct, summary, temp_home
from sqlalchemy import insert, select

from scheduler.clock import now_ms
from scheduler.cluster_state import gather_state
from scheduler.dispatcher import Dispatcher
from scheduler.nodes import NodeGpu
from scheduler.policy.aging import overdue_at_s, static_score
from scheduler.policy.types import PriorityClass, QueuedTask
from scheduler.redis_server import EmbeddedRedis
from scheduler.service import Cluster
from scheduler.settings import Settings
from scheduler.store.identity import create_token
from scheduler.store.queue import QueueEntry
from scheduler.store.tables import Attempt, Task, Team, User

TEAMS = 20
NODES = 4
GPUS_PER_NODE = 8
SIZES, WEIGHTS = [1, 2, 4, 8], [0.6, 0.2, 0.15, 0.05]
PRIORITIES, PWEIGHTS = ["low", "normal", "high", "urgent"], [0.2, 0.6, 0.15, 0.05]


def _ids(cluster: Cluster) -> list[tuple[int, int, str]]:
    """(user id, team id, member "team/user") of each of the bench's people."""
    for i in range(TEAMS):
        create_token(cluster.factory, user=f"user{i}", team=f"team{i}")
    with cluster.factory() as s:
        query = select(User.id, User.team_id, Team.name, User.name).join(Team, User.team_id == Team.id)
        return [(uid, tid, f"{team}/{user}") for uid, tid, team, user in s.execute(query)]


def _publish_nodes(cluster: Cluster) -> None:
    gpus = [NodeGpu(i, "SIM-24GB", 24 * 1024, 24 * 1024) for i in range(GPUS_PER_NODE)]
    for n in range(NODES):
        cluster.nodes.publish(f"node{n}", gpus, now_ms(), "simulated")


def _insert_queued(
    cluster: Cluster, people: list[tuple[int, int, str]], count: int, rng: random.Random
) -> None:
    """`count` queued rows in bulk, and their queue entries (queue, overdue set, member index) as the API's
    submissions make them."""
    now = datetime.now(UTC)
    config = cluster.policy_config
    batch = 5000
    for start in range(0, count, batch):
        rows, members = [], []
        for _ in range(min(batch, count - start)):
            uid, tid, member = rng.choice(people)
            gpus = rng.choices(SIZES, WEIGHTS)[0]
            estimate = rng.choice([None, 10, 60, 600])
            spec = {"command": "true", "workdir": "/tmp"}
            if estimate:
                spec["estimated_minutes"] = estimate
            members.append(member)
            rows.append(
                {
                    "team_id": tid, "user_id": uid, "name": f"job{rng.randrange(50)}", "command": "true",
                    "spec": spec, "status": "queued", "priority": rng.choices(PRIORITIES, PWEIGHTS)[0],
                    "gpus": gpus, "retries": 0,
                    "submitted_at": now - timedelta(seconds=rng.uniform(0, 86400)),
                }
            )  # fmt: skip
        for row in rows:
            row["enqueued_at"] = row["submitted_at"]
        with cluster.engine.begin() as conn:
            result = conn.execute(insert(Task).returning(Task.id, Task.team_id), rows)
            ids = [r[0] for r in result]
        entries = []
        for task_id, row, member in zip(ids, rows, members, strict=True):
            q = QueuedTask(
                task_id=task_id, team="", user="", gpus=row["gpus"],
                enqueued_at_s=row["enqueued_at"].timestamp(),
                priority=PriorityClass.parse(row["priority"]),
                estimated_s=row["spec"].get("estimated_minutes", 0) * 60 or None,
            )  # fmt: skip
            entries.append(QueueEntry(task_id, static_score(q, config), overdue_at_s(q, config), member))
        cluster.queue.enqueue_many(entries)


def _insert_history(
    cluster: Cluster, people: list[tuple[int, int, str]], count: int, rng: random.Random
) -> None:
    now = datetime.now(UTC)
    rows = []
    for i in range(count):
        uid, tid, _ = rng.choice(people)
        started = now - timedelta(seconds=rng.uniform(600, 6 * 86400))
        finished = started + timedelta(seconds=rng.uniform(10, 3600))
        rows.append(
            {
                "team_id": tid, "user_id": uid, "name": f"job{i % 50}", "command": "true",
                "spec": {"command": "true"}, "status": "succeeded", "priority": "normal",
                "gpus": rng.choices(SIZES, WEIGHTS)[0], "retries": 0, "submitted_at": started,
                "enqueued_at": started, "started_at": started, "finished_at": finished, "attempts_count": 1,
                "lease_token": f"x-{i}", "node": "node0", "gpu_indices": [0],
            }
        )  # fmt: skip
    with cluster.engine.begin() as conn:
        ids = [r[0] for r in conn.execute(insert(Task).returning(Task.id), rows)]
        conn.execute(
            insert(Attempt),
            [
                {
                    "task_id": tid, "number": 1, "token": row["lease_token"], "node": "node0",
                    "gpu_indices": [0],
                    "started_at": row["started_at"], "finished_at": row["finished_at"], "exit_code": 0,
                    "outcome": "succeeded", "reason": "exit",
                }
                for tid, row in zip(ids, rows, strict=True)
            ],
        )  # fmt: skip


def _insert_running(cluster: Cluster, people: list[tuple[int, int, str]], busy_gpus: int) -> list[int]:
    """Running tasks (1 or 2 GPUs) holding the first `busy_gpus` GPUs, with leases; returns their ids."""
    now = datetime.now(UTC)
    rows = []
    slots = [(f"node{n}", g) for n in range(NODES) for g in range(GPUS_PER_NODE)][:busy_gpus]
    i = 0
    while slots:
        take = slots[:2] if len(slots) >= 2 and slots[0][0] == slots[1][0] and i % 2 else slots[:1]
        slots = slots[len(take) :]
        uid, tid, _ = people[i % len(people)]
        rows.append(
            {
                "team_id": tid, "user_id": uid, "name": "running", "command": "sleep 1000",
                "spec": {"command": "sleep 1000", "estimated_minutes": 30}, "status": "running",
                "priority": "normal", "gpus": len(take), "retries": 0, "submitted_at": now,
                "enqueued_at": now, "started_at": now - timedelta(minutes=5), "attempts_count": 1,
                "lease_token": f"run-{i}", "node": take[0][0], "gpu_indices": [g for _, g in take],
            }
        )  # fmt: skip
        i += 1
    with cluster.engine.begin() as conn:
        ids = [r[0] for r in conn.execute(insert(Task).returning(Task.id), rows)]
    far = now_ms() + 3600_000
    for task_id, row in zip(ids, rows, strict=True):
        cluster.queue.restore_lease(task_id, row["lease_token"], row["node"], row["gpu_indices"], far)
    return ids


def _undo(cluster: Cluster, starts: tuple, scores: dict[int, float]) -> None:
    """Give the pass's starts back to the queue and the overdue set at their old scores (unassign.lua)."""
    for start in starts:
        cluster.queue.return_assignment(start.task_id, start.node, scores.get(start.task_id, 0.0))
        cluster.queue.client.delete(cluster.queue.keys.node_doorbell(start.node))


def _measure(dispatcher: Dispatcher, passes: int, undo: bool) -> tuple[list[float], float]:
    cluster = dispatcher.cluster
    times: list[float] = []
    started = 0
    for _ in range(passes):
        scores = {}
        if undo:
            scores = {i: s for i, s in cluster.queue.head(dispatcher.config.window)}
        t0 = time.perf_counter()
        decisions = dispatcher.run_pass()
        times.append(time.perf_counter() - t0)
        started += len(decisions.starts)
        if undo and decisions.starts:
            _undo(cluster, decisions.starts, scores)
    return times, started / passes


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--passes", type=int, default=300)
    ap.add_argument("--depths", default="1000,10000,100000")
    args = ap.parse_args()
    depths = [int(d) for d in args.depths.split(",")]
    rng = random.Random(1)
    out: dict[str, object] = {"bench": "decision_cost", "machine": machine(), "passes": args.passes}
    out["setup"] = (
        f"{NODES}x{GPUS_PER_NODE} GPUs, {TEAMS} teams, 5000 finished tasks of history, SQLite + redis"
    )
    with temp_home("decision") as home:
        redis_server = EmbeddedRedis(home / "redis", appendonly=False).start()
        os.environ.pop("NIGHTSHIFT_DATABASE_URL", None)
        settings = Settings(home=Path(home), simulate_gpus=None)
        cluster = Cluster.open(settings, redis_server.url)
        try:
            people = _ids(cluster)
            _insert_history(cluster, people, 5000, rng)
            running_busy = _insert_running(cluster, people, NODES * GPUS_PER_NODE)
            dispatcher = Dispatcher(cluster)
            results: dict[str, dict[str, object]] = {}
            have = 0
            for depth in depths:
                _insert_queued(cluster, people, depth - have, rng)
                have = depth
                _publish_nodes(cluster)
                row: dict[str, object] = {"queued": cluster.queue.length()}
                # busy: every GPU held
                dispatcher.run_pass()
                times, _ = _measure(dispatcher, args.passes, undo=False)
                row["busy_ms"] = summary(times, digits=3)
                # the policy alone (`decide` on the gathered state, as the pass calls it), without the I/O
                state = gather_state(cluster, dispatcher.usage, dispatcher.config.window, dispatcher.rows)
                times = []
                for _ in range(args.passes):
                    t0 = time.perf_counter()
                    dispatcher._decide(state)
                    times.append(time.perf_counter() - t0)
                row["policy_only_busy_ms"] = summary(times, digits=3)
                # mix: free two GPUs of node3 (drop the running task(s) holding them), measure, put them back
                with cluster.engine.begin() as conn:
                    held = conn.execute(
                        select(Task.id, Task.gpu_indices).where(
                            Task.id.in_(running_busy), Task.node == "node3"
                        )
                    ).all()
                freed = [tid for tid, gi in held if max(gi) >= GPUS_PER_NODE - 2]
                with cluster.engine.begin() as conn:
                    conn.execute(Task.__table__.update().where(Task.id.in_(freed)).values(status="succeeded"))
                times, starts = _measure(dispatcher, args.passes, undo=True)
                row["mix_ms"] = summary(times, digits=3)
                row["mix_starts_per_pass"] = round(starts, 2)
                with cluster.engine.begin() as conn:
                    conn.execute(Task.__table__.update().where(Task.id.in_(freed)).values(status="running"))
                # safety work, once a minute in the live loop
                t0 = time.perf_counter()
                dispatcher._reconcile_redis(-1e9)  # what the live loop does once a minute
                row["redis_check_ms"] = round((time.perf_counter() - t0) * 1000, 1)
                if depth <= 10_000:  # the full rebuild (only when the check finds a loss) is O(n) round trips
                    t0 = time.perf_counter()
                    cluster.rebuild_redis()
                    row["full_rebuild_ms"] = round((time.perf_counter() - t0) * 1000, 1)
                t0 = time.perf_counter()
                dispatcher.reap_expired_leases()
                row["reap_ms"] = round((time.perf_counter() - t0) * 1000, 2)
                t0 = time.perf_counter()
                dispatcher.usage.invalidate()
                dispatcher.usage.get(time.time())
                row["usage_refresh_ms"] = round((time.perf_counter() - t0) * 1000, 1)
                results[str(depth)] = row
        finally:
            cluster.close()
            redis_server.stop()
    out["depths"] = results
    first, last = str(depths[0]), str(depths[-1])
    p99_first = results[first]["busy_ms"]["p99"]  # type: ignore[index]
    p99_last = results[last]["busy_ms"]["p99"]  # type: ignore[index]
    mix_first = results[first]["mix_ms"]["p99"]  # type: ignore[index]
    mix_last = results[last]["mix_ms"]["p99"]  # type: ignore[index]
    out["ratio_p99_busy_last_vs_first"] = round(p99_last / p99_first, 2)
    out["ratio_p99_mix_last_vs_first"] = round(mix_last / mix_first, 2)
    policy_last = results[last]["policy_only_busy_ms"]["p99"]  # type: ignore[index]
    out["targets"] = {
        "policy_p99_100k_lt_5ms": policy_last < 5.0,
        "p99_100k_lt_5ms": max(p99_last, mix_last) < 5.0,
        "within_3x_of_1k": max(p99_last / p99_first, mix_last / mix_first) <= 3.0,
    }
    _ = pct
    emit(out)


if __name__ == "__main__":
    main()
