"""Plain-language reasons a task is not running, shared by `decide` and `explain`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime

from scheduler.policy.types import GpuSlot
from scheduler.policy.windows import zone


def human_duration(seconds: float) -> str:
    """`"~25 min"`, `"~3 h"`, `"~2 d"`: rounded, for people."""
    s = max(0.0, seconds)
    if s < 90:
        return "~1 min"
    if s < 90 * 60:
        return f"~{round(s / 60)} min"
    if s < 36 * 3600:
        hours = s / 3600
        return f"~{hours:.1f} h" if hours < 10 else f"~{round(hours)} h"
    return f"~{s / 86400:.1f} d"


def local_time(epoch_s: float, now_s: float, tz_name: str) -> str:
    """`"23:00"` today, `"tomorrow 07:00"`, `"yesterday 23:00"`, else `"2024-05-01 23:00"`: a bare hour
    must not be read as today when it is tomorrow's."""
    tz = zone(tz_name)
    try:
        moment = datetime.fromtimestamp(epoch_s, tz)
    except (OverflowError, ValueError, OSError):  # beyond year 9999: only a stored typo gets here
        return "a date out of range"
    days = (moment.date() - datetime.fromtimestamp(now_s, tz).date()).days
    word = {0: "", 1: "tomorrow ", -1: "yesterday "}.get(days)
    return moment.strftime("%Y-%m-%d %H:%M") if word is None else f"{word}{moment:%H:%M}"


def ends_after_deadline(end_s: float, deadline_s: float, now_s: float, tz_name: str) -> str:
    """`"expected to end around tomorrow 01:40, after its deadline 08:16"` (a deadline is "should finish
    by": a soft goal, said, never enforced)."""
    end, deadline = local_time(end_s, now_s, tz_name), local_time(deadline_s, now_s, tz_name)
    return f"expected to end around {end}, after its deadline {deadline}"


def queue_ends_after_deadline(
    start_s: float, end_s: float, deadline_s: float, now_s: float, tz_name: str
) -> str:
    """`"with the work queued ahead of it, it should start around 14:20 and end around 18:20, after its
    deadline 17:00"`: a task that could make its deadline on an idle cluster but not behind today's queue
    (a forecast, said at submit; never enforced)."""
    start, end = local_time(start_s, now_s, tz_name), local_time(end_s, now_s, tz_name)
    deadline = local_time(deadline_s, now_s, tz_name)
    return (
        f"with the work queued ahead of it, it should start around {start} and end around {end}, "
        f"after its deadline {deadline}"
    )


def amount(value: float, decimals: int = 1) -> str:
    """`"40.0"`, `"0.025"`: an amount (GPU-hours, kWh, a cost) to `decimals` places, or two significant
    digits where those would round it to nothing (a 0.02 GPU-h budget used up must not read "0.0/0.02",
    nor a 1-minute task's energy "0.0 kWh")."""
    if value == 0 or abs(value) >= 0.5 * 10**-decimals:
        return f"{value:.{decimals}f}"
    return f"{value:.{1 - math.floor(math.log10(abs(value)))}f}"


def energy_cost_words(energy_kwh: float, energy_cost: float | None, currency: str) -> str:
    """`"~1.2 kWh, ~0.15 USD"`: a task's expected energy and its cost (the cost left out while its start,
    which prices it, is unknown); the CLI and the UI say it alike."""
    words = f"~{amount(energy_kwh, 1)} kWh"
    if energy_cost is None:
        return words
    return f"{words}, ~{amount(energy_cost, 2)} {currency}".rstrip()


def behind(n: int) -> str:
    """`"behind 3 higher-priority tasks"`."""
    return f"behind {n} higher-priority task{'s' if n != 1 else ''}"


def held(by: str, task_id: int) -> str:
    """`"held by alice: nightshift release 12 lets it start"`."""
    return f"held by {by}: nightshift release {task_id} lets it start"


def waiting_for_slot(sweep_id: int, max_running: int | None) -> str:
    """`"waiting for a slot: sweep 3 runs at most 4 at a time"` (its `max_running`; None while the limit
    is being lifted)."""
    limit = f"at most {max_running}" if max_running is not None else "a limited number"
    return f"waiting for a slot: sweep {sweep_id} runs {limit} at a time"


def team_cap(team: str, cap: int) -> str:
    """`"team vision is at its 4-GPU cap"`."""
    return f"team {team} is at its {cap}-GPU cap"


def user_cap(user: str, cap: int) -> str:
    """`"alice is at the 2-GPU cap per person"`."""
    return f"{user} is at the {cap}-GPU cap per person"


def waiting_for_parent(parent_id: int) -> str:
    """`"waiting for task 12 to succeed"`."""
    return f"waiting for task {parent_id} to succeed"


def waiting_for_parent_to_end(parent_id: int) -> str:
    """`"waiting for task 12 to end"`: a `depends_on_any` parent that has not ended yet."""
    return f"waiting for task {parent_id} to end"


def parent_failed(parent_id: int) -> str:
    """The reason a dependent task is failed."""
    return f"task {parent_id}, which it depends on, did not succeed"


def no_room(gpus: int, gpu_memory_mib: int, next_free_in_s: float | None) -> str:
    """`"no GPU has 40 GB free; the next frees in ~25 min"` and its variants."""
    if gpu_memory_mib > 0:
        head = f"no GPU has {gpu_memory_mib / 1024:.0f} GB free"
        if gpus > 1:
            head = f"no node has {gpus} GPUs with {gpu_memory_mib / 1024:.0f} GB free"
    elif gpus > 1:
        head = f"no node has {gpus} free GPUs"
    else:
        head = "all GPUs are busy"
    if next_free_in_s is None:
        return head
    return f"{head}; the next frees in {human_duration(next_free_in_s)}"


def held_outside(gpus: int, gpu_memory_mib: int, closest: GpuSlot) -> str:
    """`"no GPU has 60 GB free, nor would one once nightshift's tasks end: 98 GB of GPU 0 of gpu-box is in use
    outside them, most by pid 4242 of alice; it starts when that is freed"`: memory no task's
    end gives back, and whose it is where the driver lists its processes."""
    head = no_room(gpus, gpu_memory_mib, None)
    gb = closest.outside_mib / 1024
    most = f", most by {closest.outside_by}" if closest.outside_by else ""
    return (
        f"{head}, nor would one once nightshift's tasks end: {gb:.0f} GB of GPU {closest.index} of "
        f"{closest.node} is in use outside them{most}; it starts when that is freed"
    )


def out_of_service(unavailable: Sequence[GpuSlot], total: int) -> str:
    """The wait of a task that would fit the cluster but not the GPUs in service now, with why they are out
    (a node-wide reason once per node, at most three reasons)."""
    whys = list(dict.fromkeys(g.why_unavailable for g in unavailable if g.why_unavailable))
    if not whys:
        whys = ["a drained or down node, a GPU too hot or holding a finished task's memory"]
    shown = "; ".join(whys[:3]) + (f"; {len(whys) - 3} more" if len(whys) > 3 else "")
    out = len(unavailable)
    where = "`nightshift nodes`" if all(w.startswith("node ") for w in whys) else "`nightshift gpus`"
    return f"waiting for GPUs out of service ({out} of {total}: {shown}; {where} shows which)"


def no_scheduler() -> str:
    """Said beside a queued task's reason while no scheduler runs: the forecasts assume one does."""
    return (
        "no scheduler is running: nothing starts until one does "
        "(an admin starts `nightshift scheduler`, or `nightshift up`, on the server)"
    )


def no_node_in_service(pinned: str | None) -> str:
    """The wait of a CPU-only task: it needs a node in service, and no GPU would choose one for it."""
    if pinned is not None:
        return f"waiting for node {pinned} to be in service (drained or down; `nightshift nodes` shows it)"
    return "waiting for a node in service (all are drained or down; `nightshift nodes` shows them)"


def reserved_ahead(task_id: int, gpus: int, nodes: tuple[str, ...]) -> str:
    """`"task 4, ahead of it, has 4 GPUs reserved on n1"`: a reservation a waiting task would run into if
    it started when GPUs next free (so it will not start then)."""
    plural = "s" if gpus != 1 else ""
    return f"task {task_id}, ahead of it, has {gpus} GPU{plural} reserved on {', '.join(nodes)}"


def reserved(gpus: int, nodes: tuple[str, ...], in_s: float) -> str:
    """The reason for the top blocked task, which holds the reservation."""
    where = ", ".join(nodes)
    plural = "s" if gpus != 1 else ""
    return f"next in line: {gpus} GPU{plural} reserved on {where}, expected free in {human_duration(in_s)}"
