"""API: submissions per second and latency with 16 concurrent clients, and 10k tasks by batch.

Starts `nightshift api` alone (scheduler and worker off, so the figures are the API's and nothing dequeues)
with `--api-workers` processes (default 2; NIGHTSHIFT_API_WORKERS) and, first, with one for the ratio,
with embedded Redis and SQLite in a temp folder, and 8 simulated GPUs registered by a short-lived worker
so submissions pass the cluster check; the per-team cap on queued tasks is raised
(NIGHTSHIFT_MAX_QUEUED_PER_TEAM) and the per-token rate limit (default 50/s) is off. Then:
- concurrent: 16 client threads, each with one keep-alive HTTP/1.1 connection (`http.client`, the
  standard library's client: it costs the 2 shared cores far less than httpx, so the figure is the API's,
  not the clients'), each POSTing `gpus: 1` tasks to /api/v1/tasks for `--seconds`, every response read
  and checked (201); submissions/s, p50/p99 latency;
- batch: 10,000 tasks as POST /api/v1/tasks/batch of `--batch-size` (1,000, the endpoint's cap) specs
  each, one after another on one connection (each batch all or nothing); wall time, tasks/s, per-batch
  latency.
Target: >= 1,000 submissions/s. Prints one JSON line.

Usage: python bench/api_throughput.py [--clients 16] [--seconds 15] [--batch 10000] [--batch-size 1000]
                                      [--api-workers 2]
"""

from __future__ import annotations

import argparse
import http.client
import json
import threading
import time

from _harness import Nightshift, emit, machine, summary, temp_home, wait_for


class _Connection:
    """One keep-alive HTTP/1.1 connection to the API with the bearer token (`http.client`)."""

    def __init__(self, ns: Nightshift) -> None:
        self.http = http.client.HTTPConnection("127.0.0.1", ns.port, timeout=120)
        self.headers = {**ns.headers, "Content-Type": "application/json"}

    def request(self, method: str, path: str, body: object | None = None) -> tuple[int, bytes]:
        """Send one request and read its whole response: (status, body)."""
        payload = json.dumps(body).encode() if body is not None else None
        self.http.request(method, f"/api/v1{path}", body=payload, headers=self.headers)
        response = self.http.getresponse()
        return response.status, response.read()

    def close(self) -> None:
        self.http.close()


def _hammer(ns: Nightshift, clients: int, seconds: float, workdir: str):
    latencies: list[list[float]] = [[] for _ in range(clients)]
    errors = [0] * clients
    codes: dict[str, int] = {}
    go = threading.Event()

    def run(i: int) -> None:
        connection = _Connection(ns)
        try:
            connection.request("GET", "/gpus")  # connect before the clock starts
            spec = {"command": "true", "gpus": 1, "workdir": workdir, "name": f"c{i}"}
            go.wait()
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:
                t0 = time.perf_counter()
                status, body = connection.request("POST", "/tasks", spec)
                latencies[i].append(time.perf_counter() - t0)
                if status != 201:
                    errors[i] += 1
                    key = f"{status} {body[:80].decode(errors='replace')}"
                    codes[key] = codes.get(key, 0) + 1
        finally:
            connection.close()

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


def _batches(ns: Nightshift, total: int, size: int, workdir: str) -> dict[str, object]:
    """`total` tasks as POST /tasks/batch of `size` specs each, one after another on one connection."""
    connection = _Connection(ns)
    latencies: list[float] = []
    created = errors = 0
    codes: dict[str, int] = {}
    try:
        connection.request("GET", "/gpus")
        t0 = time.perf_counter()
        for number in range(-(-total // size)):
            count = min(size, total - number * size)
            specs = [
                {"command": "true", "gpus": 1, "workdir": workdir, "name": f"b{number}-{i}"}
                for i in range(count)
            ]
            started = time.perf_counter()
            status, body = connection.request("POST", "/tasks/batch", {"specs": specs, "name": f"b{number}"})
            latencies.append(time.perf_counter() - started)
            if status == 201:
                created += int(json.loads(body)["tasks_count"])
            else:
                errors += 1
                key = f"{status} {body[:80].decode(errors='replace')}"
                codes[key] = codes.get(key, 0) + 1
        wall = time.perf_counter() - t0
    finally:
        connection.close()
    return {
        "tasks": created,
        "batches": len(latencies),
        "batch_size": size,
        "errors": errors,
        "error_kinds": codes,
        "wall_s": round(wall, 2),
        "per_s": round(created / wall, 1),
        "batch_latency_ms": summary(latencies),
        "how": f"POST /api/v1/tasks/batch x {len(latencies)} (all or nothing each), one connection",
    }


def _serve_and_hammer(home, api_workers: int, args: argparse.Namespace, batch: bool) -> dict[str, object]:
    """`nightshift api` with `api_workers` processes: the concurrent figure (and, with `batch`, the batch)."""
    api = Nightshift(
        home, "api", gpus="8x24", max_queued_per_team="10000000", rate_limit_per_s="0",
        api_workers=str(api_workers),
    ).start()  # fmt: skip
    out: dict[str, object] = {"api_processes": api_workers}
    try:
        # a worker registers the node's 8 GPUs, then stops (its record stays for 30 s of liveness)
        worker = Nightshift(home, "worker", gpus="8x24")
        worker.env["NIGHTSHIFT_REDIS_URL"] = (home / "redis.url").read_text().strip()
        worker.start(wait_api=False)
        with api.client() as client:
            wait_for(lambda: len(client.get("/gpus").json()["gpus"]) > 0, 30, 0.1)
        worker.stop()
        with api.client() as client:  # after the worker is gone the node still counts for submissions
            client.post(
                "/tasks", json={"command": "true", "gpus": 1, "workdir": str(home)}
            ).raise_for_status()

        lat, errors, wall, codes = _hammer(api, args.clients, args.seconds, str(home))
        out["concurrent"] = {
            "clients": args.clients,
            "client": "http.client, one keep-alive connection per thread",
            "submissions": len(lat),
            "errors": errors,
            "error_kinds": codes,
            "per_s": round(len(lat) / wall, 1),
            "latency_ms": summary(lat),
        }
        if batch:
            out["batch"] = _batches(api, args.batch, args.batch_size, str(home))
    finally:
        api.stop()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--seconds", type=float, default=15.0)
    ap.add_argument("--batch", type=int, default=10_000)
    ap.add_argument("--batch-size", type=int, default=1000, help="specs per POST (the endpoint takes 1000)")
    ap.add_argument("--api-workers", type=int, default=2, help="API processes (NIGHTSHIFT_API_WORKERS)")
    args = ap.parse_args()
    out: dict[str, object] = {"bench": "api_throughput", "machine": machine()}
    out["setup"] = (
        f"nightshift api alone (scheduler and worker off) with {args.api_workers} uvicorn processes "
        "(uvloop, httptools; the rate limit then in Redis), embedded redis, SQLite WAL, one admin token, "
        "rate limit off, queued cap raised; the same with 1 process first, for the ratio"
    )
    with temp_home("api1") as home:
        one = _serve_and_hammer(home, 1, args, batch=False)
    with temp_home("api") as home:
        many = _serve_and_hammer(home, args.api_workers, args, batch=True)
    out["concurrent"] = many["concurrent"]
    out["batch"] = many["batch"]
    out["one_process"] = one["concurrent"]
    rate = out["concurrent"]["per_s"]  # type: ignore[index]
    out["ratio_vs_one_process"] = round(rate / one["concurrent"]["per_s"], 2)  # type: ignore[index]
    out["targets"] = {"ge_1000_submissions_per_s": rate >= 1000}
    emit(out)


if __name__ == "__main__":
    main()
