"""`nightshift wait` and `submit --wait`: block until tasks end, and exit as a script expects (0 when every
task succeeded; the first failed task's own exit code otherwise, as `sbatch --wait` does)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Annotated, Any

import typer

from api.cli.render import console, duration_words, err_console, plain, print_error, print_json
from api.client import ClientError, NightshiftClient
from scheduler.settings import get_settings

ENDED = frozenset({"succeeded", "failed", "cancelled"})
FIRST_POLL_S = 0.5
LONGEST_POLL_S = 5.0
TIMED_OUT_EXIT = 124  # as timeout(1): still running when --timeout ran out


class WaitTimedOut(Exception):
    """`--timeout` ran out with tasks still queued or running (`pending`, by id)."""

    def __init__(self, pending: list[int]) -> None:
        super().__init__(f"still not ended: {', '.join(map(str, pending))}")
        self.pending = pending


def wait_for_tasks(
    client: NightshiftClient,
    task_ids: Iterable[int],
    *,
    timeout_s: float | None = None,
    on_end: Callable[[dict[str, Any]], None] = lambda task: None,
    on_unreachable: Callable[[ClientError], None] = lambda error: None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> list[dict[str, Any]]:
    """Poll until every task has ended (each given to `on_end` as it does); the tasks in the order asked.
    The poll starts at half a second and slows to every 5 s, so a long wait costs the API little. An API
    that does not answer (restarting, say) is told to `on_unreachable` and asked again at the next poll.
    Raises `WaitTimedOut` after `timeout_s`, and the client's error for a task one may not see."""
    order = list(dict.fromkeys(task_ids))
    ended: dict[int, dict[str, Any]] = {}
    deadline = None if timeout_s is None else clock() + timeout_s
    pause = FIRST_POLL_S
    while True:
        for task_id in order:
            if task_id in ended:
                continue
            try:
                task = client.get_task(task_id)
            except ClientError as exc:
                if exc.status_code and exc.status_code < 500:
                    raise
                on_unreachable(exc)
                break
            if task["status"] in ENDED:
                ended[task_id] = task
                on_end(task)
        pending = [task_id for task_id in order if task_id not in ended]
        if not pending:
            return [ended[task_id] for task_id in order]
        if deadline is not None and clock() + pause > deadline:
            left = deadline - clock()
            if left <= 0:
                raise WaitTimedOut(pending)
            pause = left  # one last look at the deadline itself
        sleep(pause)
        pause = min(pause * 1.5, LONGEST_POLL_S)


def wait_exit_code(tasks: Iterable[dict[str, Any]]) -> int:
    """0 when every task succeeded; else the first failed task's exit code when it had one (1-255), else 1
    (cancelled, timed out, lost, or a dependency that failed)."""
    for task in tasks:
        if task["status"] == "succeeded":
            continue
        code = task.get("exit_code")
        return code if isinstance(code, int) and 0 < code < 256 else 1
    return 0


def ended_line(task: dict[str, Any]) -> str:
    """`task 12 (train) succeeded after 42 min` / `task 13 (eval) failed: exit code 1`."""
    head = f"task {task['id']} ({task['name']}) {task['status']}"
    if task["status"] == "succeeded":
        took = _run_seconds(task)
        return f"{head} after {duration_words(took)}" if took is not None else head
    why = task.get("message") or task.get("reason")
    return f"{head}: {why}" if why and why != task["status"] else head


def _run_seconds(task: dict[str, Any]) -> float | None:
    started, finished = task.get("started_at"), task.get("finished_at")
    if not started or not finished:
        return None
    return (datetime.fromisoformat(str(finished)) - datetime.fromisoformat(str(started))).total_seconds()


def wait_and_report(
    client: NightshiftClient, task_ids: list[int], timeout_s: float | None, as_json: bool
) -> int:
    """Wait for the tasks, saying each end as it comes (or printing them all as JSON at the end); the exit
    code of `wait_exit_code`, `TIMED_OUT_EXIT` when `timeout_s` ran out, 130 on Ctrl-C (the tasks go on)."""

    def say(task: dict[str, Any]) -> None:
        if not as_json:
            console.print(plain(ended_line(task)), highlight=False)

    unreachable_said = False

    def say_unreachable(error: ClientError) -> None:
        nonlocal unreachable_said
        if not unreachable_said:
            err_console.print(f"note: {error.message}; still waiting", markup=False, highlight=False)
            unreachable_said = True

    try:
        tasks = wait_for_tasks(
            client, task_ids, timeout_s=timeout_s, on_end=say, on_unreachable=say_unreachable
        )
    except WaitTimedOut as exc:
        print_error(f"--timeout ran out; {exc} (they go on: `nightshift wait` again, or cancel them)")
        return TIMED_OUT_EXIT
    except KeyboardInterrupt:
        err_console.print("stopped waiting; the tasks go on", highlight=False)
        return 130
    if as_json:
        print_json(tasks)
    return wait_exit_code(tasks)


def wait_command(
    task_ids: Annotated[list[int] | None, typer.Argument(help="the tasks to wait for")] = None,
    sweep: Annotated[int | None, typer.Option("--sweep", help="every task of this sweep")] = None,
    timeout: Annotated[
        float | None, typer.Option("--timeout", min=0, help="give up after this many seconds (exit 124)")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the ended tasks as JSON")] = False,
) -> None:
    """Wait until tasks end: exit 0 when all succeeded, else the first failed one's exit code.

    As `sbatch --wait` and `tsp -w`, for scripts: `nightshift wait 12 && python eval.py`.
    Cancelled, timed out or lost: exit 1; --timeout ran out: exit 124 (the tasks go on)."""
    if not task_ids and sweep is None:
        print_error("give task ids, or --sweep ID")
        raise typer.Exit(2)
    client = NightshiftClient.from_settings(get_settings())
    try:
        ids = list(task_ids or [])
        if sweep is not None:
            ids += [task["id"] for task in client.get(f"/sweeps/{sweep}")["tasks"]]
        code = wait_and_report(client, ids, timeout, as_json)
    except ClientError as exc:
        print_error(exc.message, exc.errors or ())
        raise typer.Exit(1) from None
    finally:
        client.close()
    raise typer.Exit(code)
