"""API: submissions per second and latency with 16 concurrent clients, and a 10k-task batch.

Starts `nightshift api` alone (scheduler and worker off, so the figures are the API's and nothing dequeues)
with embedded Redis and SQLite in a temp folder, and 8 simulated GPUs registered by a short-lived worker
so submissions pass the cluster check; the per-team cap on queued tasks is raised
(NIGHTSHIFT_MAX_QUEUED_PER_TEAM) and the per-token rate limit (default 50/s) is off. Then:
- concurrent: 16 client threads (httpx, keep-alive), each POSTing `gpus: 1` tasks for `--seconds`;
  submissions/s, p50/p99 latency;
- batch: 10,000 tasks. nightshift has no batch endpoint, so this is 10,000 submissions over 16 pipelined
  keep-alive connections (wall time and rate), noted as such in the output.
Target: >= 1,000 submissions/s. Prints one JSON line.

Usage: python bench/api_throughput.py [--clients 16] [--seconds 15] [--batch 10000]
"""

from __future__ import annotations

import argparse
import threading
import time

from _harness import Nightshift, emit, machine, summary, temp_home, wait_for


def _hammer(ns: Nightshift, clients: int, per_client: int | None, seconds: float | None, workdir: str):
    latencies: list[list[float]] = [[] for _ in range(clients)]
    errors = [0] * clients
    codes: dict[str, int] = {}
    go = threading.Event()

    def run(i: int) -> None:
        with ns.client() as http:
            http.get("/gpus")  # connect before the clock starts
            go.wait()
            deadline = time.monotonic() + seconds if seconds else None
            n = 0
            while (per_client is None or n < per_client) and (
                deadline is None or time.monotonic() < deadline
            ):
                spec = {"command": "true", "gpus": 1, "workdir": workdir, "name": f"c{i}"}
                t0 = time.perf_counter()
                response = http.post("/tasks", json=spec)
                latencies[i].append(time.perf_counter() - t0)
                if response.status_code != 201:
                    errors[i] += 1
                    key = f"{response.status_code} {response.text[:80]}"
                    codes[key] = codes.get(key, 0) + 1
                n += 1

    threads = [threading.Thread(target=run, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    time.sleep(0.5)
    t0 = time.perf_counter()
    go.set()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    flat = [x for per in latencies for x in per]
    return flat, sum(errors), wall, codes


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--seconds", type=float, default=15.0)
    ap.add_argument("--batch", type=int, default=10_000)
    args = ap.parse_args()
    out: dict[str, object] = {"bench": "api_throughput", "machine": machine()}
    out["setup"] = (
        "nightshift api alone (scheduler and worker off), embedded redis, SQLite WAL, 1 uvicorn process, "
        "one admin token, rate limit off, queued cap raised"
    )
    with temp_home("api") as home:
        api = Nightshift(
            home, "api", gpus="8x24", max_queued_per_team="10000000", rate_limit_per_s="0"
        ).start()
        try:
            # a worker registers the node's 8 GPUs, then stops (its record stays for 30 s of liveness)
            worker = Nightshift(home, "worker", gpus="8x24")
            worker.env["NIGHTSHIFT_REDIS_URL"] = (home / "redis.url").read_text().strip()
            worker.start(wait_api=False)
            with api.client() as http:
                wait_for(lambda: len(http.get("/gpus").json()["gpus"]) > 0, 30, 0.1)
            worker.stop()
            with api.client() as http:  # after the worker is gone the node still counts for submissions
                http.post(
                    "/tasks", json={"command": "true", "gpus": 1, "workdir": str(home)}
                ).raise_for_status()

            lat, errors, wall, codes = _hammer(api, args.clients, None, args.seconds, str(home))
            out["concurrent"] = {
                "clients": args.clients,
                "submissions": len(lat),
                "errors": errors,
                "error_kinds": codes,
                "per_s": round(len(lat) / wall, 1),
                "latency_ms": summary(lat),
            }
            per = -(-args.batch // args.clients)
            lat, errors, wall, codes = _hammer(api, args.clients, per, None, str(home))
            out["batch"] = {
                "tasks": len(lat),
                "errors": errors,
                "error_kinds": codes,
                "wall_s": round(wall, 2),
                "per_s": round(len(lat) / wall, 1),
                "how": f"no batch endpoint: {args.clients} keep-alive connections x {per} sequential POSTs",
            }
        finally:
            api.stop()
    rate = out["concurrent"]["per_s"]  # type: ignore[index]
    out["targets"] = {"ge_1000_submissions_per_s": rate >= 1000}
    emit(out)


if __name__ == "__main__":
    main()
