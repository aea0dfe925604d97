"""nightshift on a real NVIDIA GPU, end to end: `nightshift scheduler` and `nightshift worker` processes
reading the GPU through NVML, tasks that run PyTorch on it, and memory held outside nightshift.

Run on a machine with one NVIDIA GPU, PyTorch and nightshift's dependencies importable:

    python scripts/device_gpu_e2e.py OUT_DIR

Steps, each printed as one JSON line ({"step": ..., "ok": true|false, ...}) and kept in OUT_DIR/e2e.json:
1. the worker publishes its GPU from NVML (GET /api/v1/gpus: source nvml, name, memory, power);
2. a process outside nightshift (the "notebook") holds all but ~FREE_GIB of the GPU's memory: GET /gpus
   lists it (pid, owner) as outside nightshift;
3. a task asking for more than the notebook leaves waits, and explain says the memory is held outside
   nightshift, by the notebook's pid; one that fits runs on the GPU (CUDA_VISIBLE_DEVICES set, PyTorch
   computes, its process not listed as outside) and ends with its energy measured from NVML power and a
   peak memory that leaves out the notebook's;
4. after it ends the GPU stays in service (the notebook's memory is not the task's leftover);
5. the notebook exits: the waiting task starts and succeeds;
6. a running task that holds GPU memory is cancelled: NVML shows the memory back, and the worker ended the
   job only once it was (no 'out of service' leftover warning);
7. two half-GPU tasks (gpu_fraction 0.5) run PyTorch side by side on the GPU, and each one's peak memory is
   its own process's (from NVML's process list), not both together; each is charged half its GPU-hours;
8. a running task given more time (PATCH time_limit_minutes) runs past its first limit and succeeds;
9. where it may start the MPS daemon (root, nvidia-cuda-mps-control), a half-GPU job that allocates 0.8 of
   its NIGHTSHIFT_GPU_MEMORY_MIB succeeds and one that allocates 1.3 of it runs out of memory (the
   CUDA_MPS_PINNED_DEVICE_MEM_LIMIT it was given); elsewhere a note says the step did not run.
Exit status 0 when every step passed. OUT_DIR also gets the scheduler's and the worker's logs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

T = TypeVar("T")
GIB = 1024**3
FREE_GIB = 40  # what the notebook leaves free
BIG_GB = 70  # more than that, even once the small task ends: waits for the notebook to go
SMALL_GB = 20  # fits beside it
TORCH_TASK = (
    "{py} -c \"import os, time, torch; x = torch.empty({gib} * 2**30, dtype=torch.uint8, device='cuda'); "
    "a = torch.randn(8192, 8192, device='cuda', dtype=torch.bfloat16); t = time.time(); n = 0\n"
    "while time.time() - t < {seconds}: a @ a; torch.cuda.synchronize(); n += 1\n"
    "print('visible', os.environ.get('CUDA_VISIBLE_DEVICES'), 'count', torch.cuda.device_count(), "
    "'name', torch.cuda.get_device_name(0), 'matmuls', n, flush=True)\""
)
NOTEBOOK = (
    "import sys, time, torch\n"
    "free, total = torch.cuda.mem_get_info()\n"
    "x = torch.empty(total - {free} * 2**30, dtype=torch.uint8, device='cuda')\n"
    "print('held', flush=True)\n"
    "sys.stdin.read()\n"
)

results: list[dict[str, Any]] = []


def step(name: str, ok: bool, **details: Any) -> bool:
    """Print and keep one step's result."""
    entry = {"step": name, "ok": bool(ok), **details}
    results.append(entry)
    print(json.dumps(entry, default=str), flush=True)
    return bool(ok)


def wait_for(what: Callable[[], T], timeout_s: float = 120.0, every_s: float = 0.5) -> T | None:
    """Poll until `what()` is truthy; its last value (None/falsy on timeout)."""
    deadline = time.monotonic() + timeout_s
    value = what()
    while not value and time.monotonic() < deadline:
        time.sleep(every_s)
        value = what()
    return value


def main() -> int:  # noqa: C901 - one script, read top to bottom
    """Run the steps of the module docstring; 0 when all passed."""
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "e2e-out")
    out.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="nightshift-e2e-"))
    env = {
        **os.environ,
        "NIGHTSHIFT_HOME": str(home),
        "NIGHTSHIFT_NODE_NAME": "gpu-box",
        "NIGHTSHIFT_ALLOW_ROOT_JOBS": "true",
        "NIGHTSHIFT_HEARTBEAT_INTERVAL_S": "1",
        "NIGHTSHIFT_TELEMETRY_INTERVAL_S": "1",
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    os.environ.update({k: v for k, v in env.items() if k.startswith("NIGHTSHIFT_")})
    cli = [sys.executable, "-c", "from api.cli.app import main; main()"]
    procs: list[subprocess.Popen[Any]] = []
    logs = {name: (out / f"{name}.log").open("w") for name in ("scheduler", "worker")}
    procs.append(
        subprocess.Popen([*cli, "scheduler"], env=env, stdout=logs["scheduler"], stderr=subprocess.STDOUT)
    )
    url_file = home / "redis.url"
    if not wait_for(url_file.is_file, 60):
        step("scheduler started", False, log=(out / "scheduler.log").read_text()[-3000:])
        return finish(out, procs)
    procs.append(subprocess.Popen([*cli, "worker"], env=env, stdout=logs["worker"], stderr=subprocess.STDOUT))

    from fastapi.testclient import TestClient

    from api.main import create_app
    from scheduler.service import Cluster
    from scheduler.settings import Settings
    from scheduler.store.identity import create_token

    cluster = Cluster.open(Settings(), url_file.read_text().strip())
    token = create_token(cluster.factory, user="ada", team="lab", is_admin=True)
    api = TestClient(create_app(cluster, ui=False))
    api.headers["Authorization"] = f"Bearer {token}"
    workdir = home / "work"
    workdir.mkdir()

    def get(path: str) -> Any:
        return api.get(f"/api/v1{path}").json()

    def submit(name: str, command: str, gpu_memory_gb: float | None = None, **extra: Any) -> dict[str, Any]:
        spec: dict[str, Any] = {"name": name, "command": command, "gpus": 1, "workdir": str(workdir), **extra}
        if gpu_memory_gb is not None:
            spec["gpu_memory_gb"] = gpu_memory_gb
        answer = api.post("/api/v1/tasks", json=spec)
        assert answer.status_code == 201, answer.text
        return dict(answer.json())

    def task(task_id: int) -> dict[str, Any]:
        return dict(get(f"/tasks/{task_id}"))

    def status_is(task_id: int, *wanted: str) -> dict[str, Any] | None:
        row = task(task_id)
        return row if row["status"] in wanted else None

    def gpu0() -> dict[str, Any]:
        return dict(get("/gpus")["gpus"][0])

    def log_of(task_id: int) -> str:
        return api.get(f"/api/v1/tasks/{task_id}/logs").text[-2000:]

    try:
        # 1. the worker's GPU, from NVML
        gpus = wait_for(lambda: get("/gpus") if get("/gpus")["gpus"] else None, 90)
        if not gpus:
            step("worker publishes its GPUs", False, log=(out / "worker.log").read_text()[-3000:])
            return finish(out, procs)
        node, first = gpus["nodes"][0], gpus["gpus"][0]
        step(
            "worker publishes its GPUs from NVML",
            node["source"] == "nvml" and first["memory_total_mib"] > 0 and first["power_w"] is not None
            # every real GPU reads whole: none published as unreadable (`GpuInfo.fault`)
            and not any(str(g.get("out_of_service") or "").startswith("unreadable") for g in gpus["gpus"]),
            nodes=gpus["nodes"],
            gpus=gpus["gpus"],
        )
        total_gib = first["memory_total_mib"] / 1024

        # 2. a notebook outside nightshift holds all but FREE_GIB
        notebook = subprocess.Popen(
            [sys.executable, "-c", NOTEBOOK.format(free=FREE_GIB)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        held = notebook.stdout.readline().strip() if notebook.stdout else ""
        seen = wait_for(lambda: (g := gpu0())["memory_free_mib"] < (FREE_GIB + 2) * 1024 and g, 30)
        named = wait_for(lambda: (g := gpu0())["outside"] and g, 30)
        step(
            "memory held outside nightshift is seen as not free, and whose it is",
            held == "held"
            and bool(seen)
            and bool(named)
            and [p["pid"] for p in named["outside"]] == [notebook.pid]
            and named["outside"][0]["user"] is not None,
            gpu=named or seen,
        )

        # 3. too big for what is free: waits, with the reason; a fitting one runs on the GPU
        big = submit("big", TORCH_TASK.format(py=sys.executable, gib=BIG_GB - 10, seconds=5), BIG_GB)
        small = submit("small", TORCH_TASK.format(py=sys.executable, gib=SMALL_GB - 6, seconds=20), SMALL_GB)
        running = wait_for(lambda: status_is(small["id"], "running", "succeeded", "failed"), 60)
        explained = get(f"/tasks/{big['id']}/explain")
        step(
            "a task asking more than is free waits, saying that memory is held outside nightshift",
            task(big["id"])["status"] == "queued"
            and bool(running)
            and f"in use outside them, most by pid {notebook.pid}" in (explained.get("reason") or ""),
            reason=explained.get("reason"),
            estimate=explained.get("estimated_start"),
        )
        busy = wait_for(lambda: (g := gpu0())["utilization_pct"] and g["utilization_pct"] > 50 and g, 60)
        done = wait_for(lambda: status_is(small["id"], "succeeded", "failed", "cancelled"), 120)
        output = log_of(small["id"])
        usage = (done or {}).get("usage") or {}
        step(
            "a task that fits runs PyTorch on its GPU and its energy is measured",
            bool(done)
            and done["status"] == "succeeded"
            and "count 1" in output
            and usage.get("energy_source") == "measured"
            and 0 < (usage.get("peak_gpu_memory_mib") or 0) < SMALL_GB * 1024  # the notebook's is not its
            and bool(busy)
            and [p["pid"] for p in busy["outside"]] == [notebook.pid],  # its own is not outside
            status=(done or {}).get("status"),
            output=output,
            usage=usage,
            busy_reading=busy,
        )

        # 4. the notebook's memory is not the finished task's leftover
        time.sleep(3)  # a few telemetry samples after the end
        after = gpu0()
        step("the GPU stays in service after the task", after["out_of_service"] is None, gpu=after)

        # 5. the notebook exits: the big task starts and succeeds
        if notebook.stdin:
            notebook.stdin.close()
        notebook.wait(30)
        big_done = wait_for(lambda: status_is(big["id"], "succeeded", "failed", "cancelled"), 150)
        step(
            "the waiting task runs once the memory is freed",
            bool(big_done) and big_done["status"] == "succeeded",
            status=(big_done or {}).get("status"),
            output=log_of(big["id"]),
            usage=(big_done or {}).get("usage"),
        )

        # 6. cancel a running task holding memory: NVML shows it back
        before = gpu0()["memory_free_mib"]
        hold = submit("hold", TORCH_TASK.format(py=sys.executable, gib=30, seconds=600), 32)
        wait_for(lambda: status_is(hold["id"], "running"), 60)
        holding = wait_for(lambda: (g := gpu0())["memory_free_mib"] < before - 25 * 1024 and g, 90)
        api.post(f"/api/v1/tasks/{hold['id']}/cancel")
        stopped = wait_for(lambda: status_is(hold["id"], "cancelled", "failed", "succeeded"), 60)
        freed = wait_for(lambda: (g := gpu0())["memory_free_mib"] > before - 2 * 1024 and g, 60)
        worker_log = (out / "worker.log").read_text()
        step(
            "a cancelled task's GPU memory is freed, and its end waits for it (no leftover warning)",
            bool(holding)
            and bool(stopped)
            and bool(freed)
            and "out of service" not in worker_log
            and "is not empty" not in worker_log,
            free_before_mib=before,
            while_running=holding,
            status=(stopped or {}).get("status"),
            after=freed,
            total_gib=total_gib,
        )
        # 7. two half-GPU tasks side by side, each with its own peak memory and half the GPU-hours
        halves = [
            submit(
                f"half-{n}", TORCH_TASK.format(py=sys.executable, gib=8 + 4 * n, seconds=20), gpu_fraction=0.5
            )
            for n in range(2)
        ]
        together = wait_for(
            lambda: g if sorted((g := gpu0())["tasks"]) == sorted(h["id"] for h in halves) else None, 90
        )
        ended = [
            wait_for(lambda h=h: status_is(h["id"], "succeeded", "failed", "cancelled"), 150) for h in halves
        ]
        usages = [(e or {}).get("usage") or {} for e in ended]
        peaks = [u.get("peak_gpu_memory_mib") or 0 for u in usages]
        step(
            "two half-GPU tasks run side by side, each with its own peak memory and half the GPU-hours",
            bool(together)
            and all(e and e["status"] == "succeeded" for e in ended)
            and 8 * 1024 <= peaks[0] < 11 * 1024  # its own 8 GiB (+ its CUDA context), not 8 + 12
            and 12 * 1024 <= peaks[1] < 15 * 1024
            and all(0 < (u.get("gpu_hours") or 0) < 30 / 3600 for u in usages),  # half of under a minute
            gpu=together,
            usages=usages,
            outputs=[log_of(h["id"]) for h in halves],
        )

        # 8. more time for a running task: it runs past its first limit
        longer = submit(
            "longer", TORCH_TASK.format(py=sys.executable, gib=2, seconds=40), time_limit_minutes=0.5
        )
        wait_for(lambda: status_is(longer["id"], "running"), 60)
        patched = api.patch(f"/api/v1/tasks/{longer['id']}", json={"time_limit_minutes": 3})
        finished = wait_for(lambda: status_is(longer["id"], "succeeded", "failed", "cancelled"), 150)
        step(
            "a running task given more time runs past its first limit",
            patched.status_code == 200 and bool(finished) and finished["status"] == "succeeded",
            patch=patched.json() if patched.status_code == 200 else patched.text,
            status=(finished or {}).get("status"),
            reason=(finished or {}).get("reason"),
        )

        # 9. under the MPS daemon a half-GPU job gets its half of the memory and no more
        mps = shutil.which("nvidia-cuda-mps-control")
        if mps is None or os.geteuid() != 0:
            note = "MPS step not run: needs root and nvidia-cuda-mps-control"
            print(json.dumps({"note": note}), flush=True)
        else:
            subprocess.run([mps, "-d"], check=True)
            try:
                grab = (
                    "{py} -c \"import os, torch; share = int(os.environ['NIGHTSHIFT_GPU_MEMORY_MIB']); "
                    "x = torch.empty(int(share * {part}) * 2**20, dtype=torch.uint8, device='cuda'); "
                    "print('held', {part}, 'of', share, 'MiB', flush=True)\""
                )
                within, beyond = (
                    submit(f"mps-{part}", grab.format(py=sys.executable, part=part), gpu_fraction=0.5)
                    for part in (0.8, 1.3)
                )
                ends = [
                    wait_for(lambda t=t: status_is(t["id"], "succeeded", "failed", "cancelled"), 120)
                    for t in (within, beyond)
                ]
                step(
                    "under MPS a half-GPU job gets its half of the memory and no more",
                    [(e or {}).get("status") for e in ends] == ["succeeded", "failed"]
                    and "out of memory" in log_of(beyond["id"]).lower(),
                    within=log_of(within["id"]),
                    beyond=log_of(beyond["id"]),
                )
            finally:
                subprocess.run([mps], input=b"quit\n", check=False)

        answer = api.get("/api/v1/reports/utilization")
        report = answer.json() if answer.status_code == 200 else answer.text
        step("report", True, report=report)
    except Exception as exc:  # a broken step is a result too: keep what came before
        step("unexpected error", False, error=repr(exc))
    finally:
        cluster.close()
    return finish(out, procs)


def finish(out: Path, procs: list[subprocess.Popen[Any]]) -> int:
    """Stop the nightshift processes, write the results; 0 when every step passed."""
    for proc in procs:
        proc.terminate()
    for proc in procs:
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
    (out / "e2e.json").write_text(json.dumps(results, indent=2, default=str) + "\n")
    passed = bool(results) and all(r["ok"] for r in results)
    print(json.dumps({"passed": passed, "steps": len(results)}), flush=True)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
