"""What the CLI prints, from what the API returns."""

from __future__ import annotations

from datetime import datetime

import pytest
from rich.console import Console

from api.cli.render import (
    error_lines,
    estimate_line,
    explain_panel,
    gpus_table,
    queue_table,
    quota_table,
    running_attempt_row,
    short_time,
    simulation_table,
    stopping_line,
    task_detail,
    tasks_table,
    usage_rows,
    waited_row,
)
from api.cli.report import summary_table, utilization_tables
from scheduler.settings import get_settings


def test_a_cancel_names_the_specs_stop_signal_and_grace() -> None:
    task = {"id": 7, "spec": {"command": "python train.py", "stop_signal": "INT", "grace_seconds": 30}}

    assert stopping_line(task) == "task 7 is stopping (SIGINT, then SIGKILL after 30 s)"


def test_a_cancel_without_stop_settings_says_sigterm_and_the_grace_period() -> None:
    task = {"id": 8, "spec": {"command": "python train.py"}}

    assert stopping_line(task) == "task 8 is stopping (SIGTERM, then SIGKILL after the grace period)"


def test_a_refusal_prints_the_apis_message_first_then_only_the_details_it_does_not_already_say() -> None:
    errors = [
        {"loc": ["gpu_memory_gb"], "message": "at most 24 GB per GPU on this cluster"},
        {"loc": ["gpus"], "message": "no GPU on this cluster has 40 GB"},
        {"loc": ["x"]},
    ]

    lines = error_lines("no GPU on this cluster has 40 GB (the largest has 24 GB)", errors)

    assert lines == [
        "error: no GPU on this cluster has 40 GB (the largest has 24 GB)",
        "  - at most 24 GB per GPU on this cluster",
    ]
    # a detail in other words than the message, but no other facts, is not printed again
    reworded = [{"loc": ["depends_on"], "message": "task 999 does not exist"}]
    assert error_lines("depends_on names task 999, which does not exist", reworded) == [
        "error: depends_on names task 999, which does not exist"
    ]


def test_several_problems_print_one_per_line() -> None:
    errors = [
        {"message": "gpus: Input should be a valid integer (got 'two')"},
        {"message": "unknown field 'x'"},
    ]

    lines = error_lines("gpus: Input should be a valid integer (got 'two'); unknown field 'x'", errors)

    assert lines == [
        "error: 2 problems:",
        "  - gpus: Input should be a valid integer (got 'two')",
        "  - unknown field 'x'",
    ]


def _text(renderable: object) -> str:
    console = Console(record=True, width=200)
    console.print(renderable)
    return console.export_text()


def test_a_tasks_status_names_its_reason_only_when_it_says_more() -> None:
    row = {"name": "x", "gpus": 1, "team": "t", "user": "u", "node": None, "gpu_indices": []}
    tasks = [
        {**row, "id": 1, "status": "cancelled", "reason": "cancelled"},
        {**row, "id": 2, "status": "failed", "reason": "no_os_account"},
    ]

    text = _text(tasks_table(tasks))

    assert "cancelled (cancelled)" not in text and "cancelled" in text
    assert "failed (no_os_account)" in text


def test_where_a_task_runs_shows_its_node_and_gpus_and_no_empty_gpu_list() -> None:
    row = {"name": "x", "status": "running", "team": "t", "user": "u"}
    tasks = [
        {**row, "id": 1, "gpus": 2, "node": "gpu-box", "gpu_indices": [2, 3]},
        {**row, "id": 2, "gpus": 0, "node": "gpu-box", "gpu_indices": []},
        {**row, "id": 3, "gpus": 1, "node": None, "gpu_indices": []},
    ]

    rows = [line.split("│") for line in _text(tasks_table(tasks)).splitlines() if line.startswith("│")]

    assert [cells[6].strip() for cells in rows] == ["gpu-box:2,3", "gpu-box", "-"]


def test_a_task_queued_again_after_an_attempt_shows_no_node_or_start_of_that_attempt() -> None:
    row = {"name": "x", "gpus": 1, "team": "t", "user": "u", "submitted_at": "2026-03-02T10:00:00+00:00"}
    attempt = {"node": "box-b", "gpu_indices": [1], "started_at": "2026-03-02T10:05:00+00:00"}
    tasks = [
        {**row, **attempt, "id": 1, "status": "queued"},
        {**row, **attempt, "id": 2, "status": "running"},
    ]

    rows = [line.split("│") for line in _text(tasks_table(tasks)).splitlines() if line.startswith("│")]

    assert [(cells[6].strip(), cells[8].strip()) for cells in rows] == [
        ("-", "-"),
        ("box-b:1", "03-02 10:05:00"),
    ]


def test_the_report_gives_waits_in_units_a_person_reads() -> None:
    row = {"gpu_hours": 1.0, "tasks": 3, "energy_kwh": 0.3, "cost": 0.1}
    report = {
        "days": 1,
        "by": "team",
        "rows": [{**row, "key": "nlp", "succeeded": 3, "failed": 0, "mean_wait_s": 5400.0}],
        "by_day": [{**row, "day": "2026-12-01", "team": "nlp", "p50_wait_s": 42.0, "p90_wait_s": 200000.0}],
        "quota": [],
        "total_gpu_hours": 1.0,
        "capacity_gpu_hours": 96,
    }

    text = _text(utilization_tables(report))

    assert "usage over the last 1 day, by team" in text
    assert "90 min" in text and "42 s" in text and "2.3 d" in text


def test_the_queue_says_how_many_waiting_tasks_it_does_not_show() -> None:
    task = {"id": 9, "name": "x", "priority": "normal", "gpus": 1, "team": "nlp", "user": "bob"}
    entry = {"position": 2, "task": {**task, "submitted_at": None}, "reason": "all GPUs are busy"}

    assert "not shown" not in _text(queue_table({"length": 1, "entries": [entry]}))
    assert "2 more not shown (other teams' tasks" in _text(queue_table({"length": 3, "entries": [entry]}))


def test_the_queue_says_when_each_task_is_expected_to_start() -> None:
    task = {
        "id": 9,
        "name": "x",
        "priority": "normal",
        "gpus": 1,
        "team": "nlp",
        "user": "bob",
        "submitted_at": None,
    }
    start = "2026-12-03T23:00:00+00:00"
    entries = [
        {"position": 1, "task": task, "reason": "waiting for off-peak", "estimated_start": start},
        {"position": 2, "task": {**task, "id": 10}, "reason": "no node has 9 GPUs", "estimated_start": None},
    ]

    lines = _text(queue_table({"length": 2, "entries": entries})).splitlines()

    assert "expected start" in lines[2]
    assert short_time(start) in next(line for line in lines if "waiting for off-peak" in line)
    assert " - " in next(line for line in lines if "no node has 9 GPUs" in line)


def test_the_queue_and_explain_say_when_no_scheduler_runs() -> None:
    task = {"id": 9, "name": "x", "priority": "normal", "gpus": 1, "team": "nlp", "user": "bob"}
    entry = {"position": 1, "task": {**task, "submitted_at": None}, "reason": "starts now"}
    warning = "no scheduler is running: nothing starts until one does"
    explained = {"task_id": 9, "status": "queued", "reason": "starts now", "scheduler_warning": warning}

    assert warning in _text(queue_table({"length": 1, "entries": [entry], "scheduler_warning": warning}))
    assert warning in _text(explain_panel(explained))
    assert "scheduler" not in _text(queue_table({"length": 1, "entries": [entry]}))


def test_explain_shows_what_a_queued_task_should_cost_and_only_the_energy_while_its_start_is_unknown() -> (
    None
):
    queued = {"task_id": 9, "status": "queued", "reason": "all GPUs are busy", "energy_kwh": 1.23}

    priced = _text(explain_panel({**queued, "energy_cost": 0.2, "currency": "USD"}))
    assert "expected energy" in priced and "~1.2 kWh, ~0.20 USD" in priced
    assert "~1.2 kWh" in _text(explain_panel({**queued, "energy_cost": None})) and "USD" not in _text(
        explain_panel({**queued, "energy_cost": None})
    )
    assert "expected energy" not in _text(explain_panel({"task_id": 9, "status": "succeeded", "reason": ""}))


def test_the_simulators_times_read_in_hours_and_days_too() -> None:
    result = {"policy": "fifo", "jobs": 3, "gpus": 8, "mean_jct_s": 82000.0, "utilization": 0.3956}

    text = _text(simulation_table(result))

    assert "82,000" in text and "22.8 h" in text and "0.396" in text


def test_a_team_above_its_cap_is_shown_borrowing_idle_gpus() -> None:
    period = {"used_gpu_h": 0.0, "budget_gpu_h": None, "state": "ok"}
    quota = {"team": "nlp", "state": "ok", "gpu_cap": 2, "day": period, "week": period}

    assert "borrowing idle GPUs" in _text(quota_table({**quota, "gpus_in_use": 3}))
    assert "at its cap" in _text(quota_table({**quota, "gpus_in_use": 2}))
    assert "borrowing" not in _text(quota_table({**quota, "gpus_in_use": 1}))


def test_quota_shows_the_callers_own_cap_beside_the_teams() -> None:
    period = {"used_gpu_h": 0.0, "budget_gpu_h": None, "state": "ok"}
    quota = {"team": "nlp", "state": "ok", "gpu_cap": None, "gpus_in_use": 3, "day": period, "week": period}
    mine = {**quota, "user": "alice", "user_gpu_cap": 2, "user_gpus_in_use": 2}

    assert "GPUs now, alice" in _text(quota_table(mine)) and "at your cap" in _text(quota_table(mine))
    assert "alice" not in _text(quota_table({**quota, "user": "alice", "user_gpu_cap": None}))


def test_quota_shows_the_teams_fair_share_standing() -> None:
    period = {"used_gpu_h": 0.0, "budget_gpu_h": None, "state": "ok"}
    fair = {"decayed_gpu_h": 12.0, "half_life_days": 7.0, "part_of_use": 0.4, "equal_share": 0.333,
            "factor": 0.435, "credit_h": 2.61, "max_credit_h": 6.0}  # fmt: skip
    quota = {"team": "nlp", "state": "ok", "gpu_cap": None, "gpus_in_use": 0, "day": period, "week": period}

    shown = _text(quota_table({**quota, "fair_share": fair}))
    assert "fair share (half-life 7 d)" in shown and "(40% of all use)" in shown
    assert "equal share 33%" in shown and "priority credit 2.61 of 6 h" in shown
    fifo = _text(quota_table({**quota, "fair_share": {**fair, "credit_h": 0.0, "max_credit_h": 0.0}}))
    assert "no fair-share credit under this policy" in fifo
    member = {"user": "alice", "decayed_gpu_h": 9.0, "part_of_team": 0.75, "members": 3, "credit_h": 1.2}
    within = _text(quota_table({**quota, "fair_share": {**fair, "member": member}}))
    assert "yours in team nlp" in within and "(75% of the team's)" in within
    assert "among 3 people" in within and "priority credit 1.2 of 6 h" in within


def test_a_used_up_budget_says_when_new_starts_are_allowed_again() -> None:
    used_up = {"used_gpu_h": 41.0, "budget_gpu_h": 40.0, "state": "exhausted"}
    quota = {"team": "nlp", "state": "exhausted", "gpu_cap": None, "gpus_in_use": 0, "day": used_up,
             "week": {**used_up, "budget_gpu_h": None, "state": "ok"}}  # fmt: skip
    at = "2026-12-03T06:47:00+00:00"
    local = datetime.fromisoformat(at).astimezone().strftime("%m-%d %H:%M")

    assert f"new starts again at {local}" in _text(quota_table({**quota, "new_starts_at": at}))
    assert "new starts again" not in _text(quota_table({**quota, "new_starts_at": None}))


def test_quota_use_reads_to_the_hundredth_of_a_gpu_hour_as_the_report_does() -> None:
    period = {"used_gpu_h": 0.0125, "budget_gpu_h": 8.0, "state": "ok"}
    quota = {"team": "nlp", "state": "ok", "gpu_cap": None, "gpus_in_use": 0, "day": period, "week": period}

    assert "0.01" in _text(quota_table(quota))


def test_a_start_time_that_is_fixed_shows_no_range() -> None:
    fixed, low, high = "2026-12-02T09:00:00+00:00", "2026-12-02T08:00:00+00:00", "2026-12-02T11:00:00+00:00"
    panel = {"task_id": 5, "status": "queued", "reason": "waiting until 09:00 (not before)"}

    assert "range" not in estimate_line({"start": fixed, "low": fixed, "high": fixed, "reason": "not before"})
    assert "; range " in estimate_line({"start": fixed, "low": low, "high": high, "reason": "behind 2 tasks"})
    fixed_panel = {
        **panel,
        "estimated_start": fixed,
        "estimated_start_low": fixed,
        "estimated_start_high": fixed,
    }
    assert "range" not in _text(explain_panel(fixed_panel))
    assert "(range " in _text(
        explain_panel({**fixed_panel, "estimated_start_low": low, "estimated_start_high": high})
    )


def test_a_running_tasks_explanation_shows_its_expected_end() -> None:
    running = {"task_id": 6, "status": "running", "reason": "running on n0 GPUs 1 since 12:00"}

    assert "expected end" in _text(explain_panel({**running, "estimated_end": "2026-12-02T09:00:00+00:00"}))
    assert "expected end" not in _text(explain_panel({**running, "estimated_end": None}))


def test_an_explanation_says_when_the_expected_end_is_after_the_deadline() -> None:
    queued = {"task_id": 5, "status": "queued", "reason": "waiting for off-peak at 23:00"}
    late = "expected to end around tomorrow 01:40, after its deadline 23:30"

    text = _text(explain_panel({**queued, "deadline_warning": late}))

    assert "deadline" in text and late in text
    assert "deadline" not in _text(explain_panel({**queued, "deadline_warning": None}))


def test_a_failed_tasks_explanation_shows_its_last_output_as_printed() -> None:
    failed = {"task_id": 7, "status": "failed", "reason": "exit code 1"}
    lines = ["Traceback (most recent call last):", "KeyError: '[bold]lr[/bold]'"]

    text = _text(explain_panel({**failed, "last_output": lines}))

    assert "last output" in text and "KeyError: '[bold]lr[/bold]'" in text  # not read as markup
    assert "last output" not in _text(explain_panel(failed))


def test_an_explanation_of_a_failed_or_running_task_says_where_its_output_is() -> None:
    failed = {"task_id": 7, "status": "failed", "reason": "exit code 2"}
    running = {"task_id": 6, "status": "running", "reason": "running on n0 GPUs 1 since 12:00"}

    assert "nightshift logs 7" in _text(explain_panel(failed))
    assert "nightshift logs 6 -f" in _text(explain_panel(running))
    assert "nightshift logs" not in _text(explain_panel({"task_id": 5, "status": "queued", "reason": "x"}))


def test_an_estimate_for_a_new_task_says_what_its_energy_would_cost() -> None:
    at = "2026-12-01T23:00:00+00:00"
    data = {"start": at, "low": at, "high": at, "wait_s": 3600, "reason": "waiting for off-peak at 23:00"}
    priced = {**data, "energy_kwh": 1.2, "energy_cost": 0.1, "currency": "EUR"}

    assert estimate_line(priced).endswith("): waiting for off-peak at 23:00; energy ~1.2 kWh, ~0.10 EUR")
    assert "energy" not in estimate_line({**priced, "energy_cost": None})
    tiny = {**data, "energy_kwh": 0.0042, "energy_cost": 0.0013, "currency": "EUR"}  # a 1-min task
    assert estimate_line(tiny).endswith("; energy ~0.0042 kWh, ~0.0013 EUR")  # not ~0.0 kWh, ~0.00 EUR
    assumed = {**data, "estimated_run_s": 5400.0, "estimate_source": "median of 4 recent runs"}
    assert estimate_line(assumed).endswith("; assumed run 90 min (median of 4 recent runs)")


def test_show_says_what_a_task_used_in_words() -> None:
    usage = {
        "attempts": 2, "gpu_hours": 1.5, "energy_kwh": 0.456, "energy_source": "measured",
        "offpeak_share": 0.25, "cost": 0.0912, "currency": "EUR", "peak_gpu_memory_mib": 18637,
        "requested_gpu_memory_mib": 40960, "mean_utilization_pct": 63.4, "cpu_hours": 2.75,
    }  # fmt: skip
    assert usage_rows(usage) == [
        ("used", "1.50 GPU-h, 0.46 kWh (measured), 0.091 EUR, 25 % off-peak (2 attempts)"),
        ("gpu memory", "peak 18.2 GB (asked 40 GB per GPU)"),
        ("gpu busy", "63 % on average"),
        ("cpu time", "2.8 h"),
    ]
    # what is not known is not shown; a task that never ended an attempt shows nothing
    bare = {**usage, "attempts": 1, "offpeak_share": None, "peak_gpu_memory_mib": None, "cpu_hours": None,
            "mean_utilization_pct": None}  # fmt: skip
    assert usage_rows(bare) == [("used", "1.50 GPU-h, 0.46 kWh (measured), 0.091 EUR")]
    # a one-second task's figures do not read as nothing
    short = {**bare, "gpu_hours": 0.000379, "energy_kwh": 0.0000947, "cost": 0.0}
    assert usage_rows(short) == [("used", "0.00038 GPU-h, 0.000095 kWh (measured), 0.00 EUR")]
    assert usage_rows({**short, "cpu_hours": 0.0000087})[-1] == ("cpu time", "0.031 s")
    assert usage_rows(None) == []


def test_show_of_a_running_task_says_what_its_attempt_has_used_so_far() -> None:
    now = datetime.fromisoformat("2026-12-03T12:00:00+00:00")
    task = {"status": "running", "gpus": 2, "started_at": "2026-12-03T11:30:00Z"}

    assert running_attempt_row(task, now) == ("running now", "~30 min on 2 GPUs so far: 1.00 GPU-h")
    assert running_attempt_row({**task, "gpus": 0}, now) == ("running now", "~30 min on CPU only so far")
    assert running_attempt_row({**task, "status": "succeeded"}, now) is None
    # its ended attempts' figures are labelled as what was used before this one
    retried = {**task, "id": 7, "usage": {
        "attempts": 1, "gpu_hours": 0.5, "energy_kwh": 0.1, "energy_source": "measured", "offpeak_share": None,
        "cost": 0.02, "currency": "EUR", "peak_gpu_memory_mib": None, "requested_gpu_memory_mib": None,
        "mean_utilization_pct": None}}  # fmt: skip
    shown = _text(task_detail(retried))
    assert "used before" in shown and "running now" in shown and "on 2 GPUs so far" in shown


def test_last_nights_failures_show_what_they_printed_last_and_names_are_not_markup() -> None:
    failed = {"id": 9, "name": "[bold]ablate[/bold]", "user": "alice", "cost": 0.1, "reason": "nonzero_exit",
              "message": "exit code 1", "last_line": "KeyError: '[red]lr'"}  # fmt: skip
    summary = {"since": "2026-12-01T18:00:00+00:00", "until": "2026-12-02T08:00:00+00:00", "succeeded": [],
               "failed": [failed], "cancelled": [], "gpu_hours": 1.0, "energy_kwh": 0.3, "cost": 0.1,
               "currency": "EUR"}  # fmt: skip

    text = _text(summary_table(summary))

    assert "[bold]ablate[/bold]" in text and "exit code 1" in text and "KeyError: '[red]lr'" in text


def test_times_are_shown_in_the_configured_zone_the_cli_reads_after_in(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`--after 23:00` is read in NIGHTSHIFT_TIMEZONE, so `ls` must show 23:00 back, not the machine's hour."""
    monkeypatch.setenv("NIGHTSHIFT_TIMEZONE", "Asia/Shanghai")
    get_settings.cache_clear()
    try:
        task = {"id": 1, "name": "train", "status": "queued", "gpus": 1, "user": "ana", "team": "nlp",
                "submitted_at": "2026-12-02T15:00:00+00:00", "started_at": None, "finished_at": None}  # fmt: skip
        shown = _text(tasks_table([task]))
    finally:
        get_settings.cache_clear()

    assert "12-02 23:00:00" in shown


def test_a_small_budget_reads_to_two_decimals_in_quota_and_report() -> None:
    day = {"used_gpu_h": 0.0, "budget_gpu_h": 0.02, "state": "exhausted"}
    week = {"used_gpu_h": 0.0038, "budget_gpu_h": 12.0, "state": "ok"}
    quota = {"team": "nlp", "state": "exhausted", "gpu_cap": None, "gpus_in_use": 0, "day": day, "week": week}
    use = {"team": "nlp", "day_used_gpu_h": 0.021, "day_budget_gpu_h": 0.02, "day_share": 1.05}
    report = {
        "days": 1, "by": "team", "rows": [], "by_day": [], "total_gpu_hours": 0.0, "capacity_gpu_hours": 96,
        "quota": [{**use, "week_used_gpu_h": 0.021, "week_budget_gpu_h": None, "week_share": None}],
    }  # fmt: skip

    quota_rows = [" ".join(line.split("│")[1:4]).split() for line in _text(quota_table(quota)).splitlines()]
    report_text = _text(utilization_tables(report))
    nlp = next(line for line in report_text.splitlines() if line.startswith("│ nlp"))

    assert ["GPU-hours", "(last", "24", "h)", "0.00", "0.02"] in quota_rows  # rolling windows, said so
    assert ["GPU-hours", "(last", "7", "days)", "0.0038", "12.00"] in quota_rows
    assert [cell.strip() for cell in nlp.split("│")[1:-1]] == ["nlp", "0.02 (105%)", "0.02", "0.02 (-)", "-"]


def test_gpus_shows_processes_outside_nightshift_only_where_there_are_some() -> None:
    gpu = {"node": "gpu-box", "index": 0, "name": "NVIDIA H200", "memory_free_mib": 40960,
           "memory_total_mib": 143771, "utilization_pct": 0.0, "temperature_c": 38.0, "power_w": 80.0,
           "tasks": [], "outside": []}  # fmt: skip
    nodes = [{"name": "gpu-box", "alive": True, "drained": False}]
    assert "outside nightshift" not in _text(gpus_table({"nodes": nodes, "gpus": [gpu]}))

    notebook = {"pid": 4242, "used_mib": 102400, "user": "alice", "command": "jupyter-lab [x]"}
    hidden = {"pid": 77, "used_mib": None, "user": None, "command": None}
    shown = _text(gpus_table({"nodes": nodes, "gpus": [{**gpu, "outside": [notebook, hidden]}]}))
    assert "outside nightshift" in shown
    assert "pid 4242 alice: jupyter-lab [x], 100.0 GB" in shown  # the command's brackets are no markup
    assert "pid 77" in shown


def test_gpus_shows_the_part_each_sharing_task_holds() -> None:
    gpu = {"node": "gpu-box", "index": 0, "name": "NVIDIA H200", "memory_free_mib": 40960,
           "memory_total_mib": 143771, "utilization_pct": 0.0, "temperature_c": 38.0, "power_w": 80.0,
           "tasks": [3, 4], "shares": {"3": 0.5, "4": 0.25}, "outside": []}  # fmt: skip
    nodes = [{"name": "gpu-box", "alive": True, "drained": False}]

    assert "3 (0.5),4 (0.25)" in _text(gpus_table({"nodes": nodes, "gpus": [gpu]}))
    assert "│ 7 " in _text(gpus_table({"nodes": nodes, "gpus": [{**gpu, "tasks": [7], "shares": {}}]}))


def test_gpus_shows_why_a_gpu_is_out_of_service_only_where_one_is() -> None:
    gpu = {"node": "gpu-box", "index": 0, "name": "NVIDIA H200", "memory_free_mib": 40960,
           "memory_total_mib": 143771, "utilization_pct": 0.0, "temperature_c": 38.0, "power_w": 80.0,
           "tasks": [], "outside": [], "out_of_service": None}  # fmt: skip
    nodes = [{"name": "gpu-box", "alive": True, "drained": False}]
    assert "out of service" not in _text(gpus_table({"nodes": nodes, "gpus": [gpu]}))

    hot = {**gpu, "index": 1, "out_of_service": "too hot: 91 °C (above 85 °C; back in service below 80 °C)"}
    shown = _text(gpus_table({"nodes": nodes, "gpus": [gpu, hot]}))
    assert "out of service" in shown
    hot_row = next(line for line in shown.splitlines() if line.startswith("│ gpu-box │ 1"))
    assert hot_row.rstrip(" │").endswith("too hot: 91 °C (above 85 °C; back in service below 80 °C)"), shown


def test_explain_says_how_long_a_queued_task_has_waited_and_how_long_a_started_one_waited() -> None:
    now = datetime.fromisoformat("2026-12-03T12:00:00+00:00")
    queued = {
        "task_id": 5,
        "status": "queued",
        "reason": "behind 1 task",
        "submitted_at": "2026-12-03T10:35:00Z",
    }
    started = {"task_id": 6, "status": "running", "reason": "running on n0 GPUs 1", "attempts": 1,
               "submitted_at": "2026-12-03T11:00:00+00:00", "started_at": "2026-12-03T11:40:00+00:00"}  # fmt: skip

    assert waited_row(queued, now) == (
        "waiting",
        f"85 min so far, since {short_time(queued['submitted_at'])}",
    )
    assert waited_row(started, now) == (
        "waited",
        f"40 min, then started {short_time(started['started_at'])}",
    )
    assert "85 min so far" in _text(explain_panel(queued, now))
    assert "python eval.py" in _text(explain_panel({**queued, "command": "python eval.py"}, now))
    # a retried task's start is its last attempt's, and a task without times says nothing of its wait
    assert waited_row({**started, "attempts": 2}, now) is None
    assert waited_row({"task_id": 7, "status": "queued", "reason": ""}, now) is None


def test_quota_shows_the_callers_own_budget_under_each_of_the_teams() -> None:
    period = {"used_gpu_h": 9.0, "budget_gpu_h": None, "state": "ok"}
    own = {
        "day": {"used_gpu_h": 10.0, "budget_gpu_h": 10.0, "state": "exhausted"},
        "week": {"used_gpu_h": 12.0, "budget_gpu_h": 40.0, "state": "ok"},
        "state": "exhausted",
        "new_starts_at": "2026-12-07T18:00:00+00:00",
    }
    quota = {"team": "nlp", "state": "ok", "gpu_cap": None, "gpus_in_use": 3, "day": period, "week": period}

    text = _text(quota_table({**quota, "user": "alice", "user_budget": own}))

    rows = [line.split("│")[1:5] for line in text.splitlines() if "yours, alice" in line]
    assert [[cell.strip() for cell in row] for row in rows] == [
        ["yours, alice", "10.00", "10.00", "exhausted"],
        ["yours, alice", "12.00", "40.00", "ok"],
    ]
    assert "your new starts again at" in text
    assert "yours" not in _text(quota_table(quota))


def test_quota_says_a_warning_or_a_used_up_budget_in_words_and_when_starts_come_again() -> None:
    day = {"used_gpu_h": 0.031, "budget_gpu_h": 0.02, "state": "exhausted"}
    week = {"used_gpu_h": 0.031, "budget_gpu_h": 1.0, "state": "ok"}
    used_up = {
        "team": "budg", "state": "exhausted", "gpu_cap": None, "gpus_in_use": 0, "day": day, "week": week,
        "message": "day budget of team budg is used up (0.031/0.02 GPU-h)",
        "new_starts_at": "2026-12-08T19:13:00+00:00",
    }  # fmt: skip
    fine = {**used_up, "state": "ok", "message": "within budget", "new_starts_at": None}

    text = " ".join(_text(quota_table(used_up)).split())

    assert "day budget of team budg is used up (0.031/0.02 GPU-h); new starts again at 12-08 " in text
    assert "within budget" not in _text(quota_table(fine))
