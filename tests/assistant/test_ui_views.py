"""What the UI shows, from API-shaped data: the confirm card, the tables and the admin charts' data."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from assistant.ui import views
from scheduler.reports import AttemptSpan, waits_over_time

ZONE = UTC


def submit_card(**spec: Any) -> dict[str, Any]:
    base = {
        "command": "python train.py",
        "name": "train.py",
        "workdir": "/w",
        "gpus": 2,
        "priority": "normal",
    }
    return {
        "kind": "submit",
        "action_id": "act_1",
        "spec": {**base, **spec},
        "summary": {
            "start_label": "tonight 23:00, off-peak",
            "estimated_start": "2026-03-02T23:00:00+00:00",
            "estimated_end": "2026-03-03T01:00:00+00:00",
            "quota": "uses ~4.0 of the team's 20.0 GPU-h left today; 16.0 GPU-h left after it",
        },
    }


def test_the_submit_card_shows_command_resources_start_finish_and_quota() -> None:
    html = views.card_html(submit_card(gpu_memory_gb=40), ZONE)
    for expected in (
        "Submit this task?",
        "python train.py",
        "2 GPUs, ≥ 40 GB free each",
        "tonight 23:00, off-peak",
        "2026-03-02 23:00",
        "2026-03-03 01:00",
        "16.0 GPU-h left after it",
        "Nothing is submitted until you confirm.",
    ):
        assert expected in html


def test_the_card_escapes_what_the_person_or_the_model_wrote() -> None:
    html = views.card_html(submit_card(command="echo <script>alert(1)</script>"), ZONE)
    assert "<script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_a_cancel_card_names_the_task_and_says_nothing_happens_yet() -> None:
    card = {"kind": "cancel", "task_id": 31, "task": {"name": "<data>sweep-7</data>", "status": "running"}}
    html = views.card_html(card, ZONE)
    assert "Cancel this task?" in html and "#31" in html and "sweep-7" in html and "running" in html
    assert "&lt;data&gt;" not in html  # the model's data markers are not shown to people
    assert "Nothing is cancelled until you confirm." in html


def test_the_task_table_has_one_row_per_task_with_times_in_the_cluster_zone() -> None:
    task = {
        "id": 7,
        "name": "train",
        "status": "failed",
        "user": "alice",
        "gpus": 2,
        "submitted_at": "2026-03-02T15:00:00+00:00",
        "started_at": "2026-03-02T15:01:00+00:00",
        "finished_at": None,
        "reason": "nonzero_exit",
    }
    frame = views.tasks_frame([task], ZONE)
    assert list(frame.columns) == views.TASK_COLUMNS
    assert frame.iloc[0].tolist() == [
        7, "train", "failed", "alice", 2, "2026-03-02 15:00", "2026-03-02 15:01", "", "nonzero_exit"
    ]  # fmt: skip


def test_the_queue_table_shows_positions_and_expected_starts() -> None:
    queue = {
        "length": 3,
        "entries": [
            {
                "position": 2,
                "task": {"id": 9, "name": "ft", "user": "bob", "team": "nlp", "gpus": 1},
                "reason": "waiting for the off-peak window",
                "estimated_start": "2026-03-02T23:00:00+00:00",
            },
            {"position": 3, "task": {"id": 10, "name": "x", "gpus": 4}, "estimated_start": None},
        ],
    }
    frame = views.queue_frame(queue, ZONE)
    assert frame["position"].tolist() == [2, 3]
    assert frame["estimated start"].tolist() == ["2026-03-02 23:00", "unknown"]


def gpus_view() -> dict[str, Any]:
    def gpu(index: int, free_mib: int, util: float | None, tasks: list[int]) -> dict[str, Any]:
        return {
            "node": "node-a",
            "index": index,
            "name": "Simulated GPU 24GB",
            "memory_total_mib": 24576,
            "memory_free_mib": free_mib,
            "utilization_pct": util,
            "temperature_c": None,
            "power_w": None,
            "tasks": tasks,
        }

    return {
        "nodes": [{"name": "node-a", "alive": True}],
        "gpus": [gpu(0, 12288, 93.0, [4]), gpu(1, 24576, None, [])],
    }


def test_the_gpu_table_and_chart_show_memory_and_utilization_per_gpu() -> None:
    frame = views.gpus_frame(gpus_view())
    assert frame.iloc[0].tolist() == ["node-a:0", "Simulated GPU 24GB", 12.0, 24.0, 12.0, 93, "", "#4"]
    assert frame.iloc[1]["util %"] == "" and frame.iloc[1]["tasks"] == ""
    usage = views.gpu_usage_frame(gpus_view())
    assert usage.values.tolist() == [
        ["node-a:0", "memory used %", 50.0],
        ["node-a:0", "utilization %", 93.0],
        ["node-a:1", "memory used %", 0.0],
        ["node-a:1", "utilization %", 0.0],
    ]


def test_gpu_share_counts_gpus_that_never_ran_anything_as_idle() -> None:
    report = {"days": 1, "rows": [{"key": "node-a:0", "gpu_hours": 6.0}]}
    share = views.gpu_share_frame(report, gpus_view())
    assert share.values.tolist() == [
        ["node-a:0", "busy", 25.0],
        ["node-a:0", "idle", 75.0],
        ["node-a:1", "busy", 0.0],
        ["node-a:1", "idle", 100.0],
    ]


def test_gpu_hours_by_team_come_from_the_report_rows() -> None:
    report = {"rows": [{"key": "vision", "gpu_hours": 30.5}, {"key": "nlp", "gpu_hours": 2.0}]}
    assert views.gpu_hours_frame(report).values.tolist() == [["vision", 30.5], ["nlp", 2.0]]


def span(task_id: int, start: str, wait_s: float | None) -> AttemptSpan:
    start_s = datetime.fromisoformat(start).timestamp()
    return AttemptSpan(task_id, "vision", "alice", (0,), "node-a", start_s, start_s + 60, "succeeded", wait_s)


def test_waits_over_time_gives_p50_and_p90_of_first_attempts_per_hour() -> None:
    since_s = datetime.fromisoformat("2026-03-02T00:00:00+00:00").timestamp()
    spans = [span(i, "2026-03-02T10:05:00+00:00", wait) for i, wait in enumerate([60, 120, 180, 240, 3000])]
    spans += [span(9, "2026-03-02T12:30:00+00:00", 30), span(10, "2026-03-02T12:40:00+00:00", None)]
    waits = waits_over_time(spans, since_s, days=1)
    assert waits == {
        "bucket_s": 3600.0,
        "points": [
            {"start": "2026-03-02T10:00:00+00:00", "tasks": 5, "p50_wait_s": 180.0, "p90_wait_s": 3000.0},
            {"start": "2026-03-02T12:00:00+00:00", "tasks": 1, "p50_wait_s": 30.0, "p90_wait_s": 30.0},
        ],
    }
    frame = views.waits_frame({"waits_over_time": waits}, ZONE)
    assert frame.values.tolist() == [
        ["2026-03-02 10:00", "p50", 3.0],
        ["2026-03-02 10:00", "p90", 50.0],
        ["2026-03-02 12:00", "p50", 0.5],
        ["2026-03-02 12:00", "p90", 0.5],
    ]


def test_waits_over_a_week_are_counted_per_day() -> None:
    since_s = datetime.fromisoformat("2026-03-01T00:00:00+00:00").timestamp()
    waits = waits_over_time([span(1, "2026-03-02T10:05:00+00:00", 90)], since_s, days=7)
    assert waits["bucket_s"] == 86400.0
    assert waits["points"][0]["start"] == "2026-03-02T00:00:00+00:00"


def test_a_what_if_estimate_reads_as_one_line() -> None:
    estimate = {
        "start": "2026-03-02T23:00:00+00:00",
        "low": "2026-03-02T22:30:00+00:00",
        "high": "2026-03-03T00:00:00+00:00",
        "wait": "8 h",
        "reason": "waits for the off-peak window",
    }
    text = views.estimate_text(estimate, ZONE)
    assert text == (
        "Expected start **2026-03-02 23:00** (range 2026-03-02 22:30 – 2026-03-03 00:00), "
        "a wait of about 8 h — waits for the off-peak window"
    )
    assert views.estimate_text({"start": None, "reason": "no node has 8 GPUs"}).endswith("no node has 8 GPUs")
