"""Reports: GPU-hours, measured energy and cost, off-peak share, waits by day and team, quota use; the
morning summary; `nightshift report` tables."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from functools import partial

import pytest
from fastapi.testclient import TestClient
from rich.console import Console
from sqlalchemy import update

from api.cli.report import summary_table, utilization_tables
from api.main import create_app
from assistant.replies import reply_for
from scheduler.clock import from_epoch_s
from scheduler.nodes import NodeGpu
from scheduler.notify.summary import morning_summary, summary_event
from scheduler.policy.config import PolicyConfig
from scheduler.reports import utilization_report
from scheduler.store.db import transaction
from scheduler.store.tables import Attempt, Task
from scheduler.task_logs import failure_lines
from scheduler.telemetry.accounting import AttemptUsage
from scheduler.telemetry.store import TelemetryStore

H = 3600.0
MIDNIGHT = datetime(2026, 3, 5, 0, 0, tzinfo=UTC).timestamp()  # Thursday 00:00 UTC


def _ran(
    cluster,
    who,
    *,
    submitted,
    started,
    finished,
    gpus=1,
    status="succeeded",
    reason="exit",
    tmp,
    fraction=1.0,
):
    """A task that waited from `submitted` and ran on `gpus` GPUs (`fraction` of one) from `started` to
    `finished`."""
    spec = {"command": "true", "gpus": gpus, "gpu_fraction": fraction, "workdir": str(tmp)}
    task = cluster.submit(who, spec)[0]
    cluster.queue.remove(task.id)
    with transaction(cluster.factory) as session:
        session.execute(
            update(Task)
            .where(Task.id == task.id)
            .values(
                status=status, reason=reason, node="box", gpu_indices=list(range(gpus)),
                submitted_at=from_epoch_s(submitted), started_at=from_epoch_s(started),
                finished_at=from_epoch_s(finished), attempts_count=1,
                message="exit code 3" if status == "failed" else None,
            )
        )  # fmt: skip
        session.add(
            Attempt(
                task_id=task.id, number=1, token=f"t{task.id}", node="box", gpu_indices=list(range(gpus)),
                started_at=from_epoch_s(started), finished_at=from_epoch_s(finished), outcome=status,
            )
        )  # fmt: skip
    return task.id


def test_reports_aggregate_gpu_hours_energy_and_waits_by_team_and_day(cluster, make_identity, tmp_path):
    alice, _ = make_identity("alice", "vision")
    bob, _ = make_identity("bob", "nlp")
    # vision: 2 GPUs 22:00-02:00 across midnight (waited 1 h), measured 1.2 kWh; then 1 GPU on day 2 10:00-11:00
    across = _ran(cluster, alice, submitted=MIDNIGHT - 3 * H, started=MIDNIGHT - 2 * H,
                  finished=MIDNIGHT + 2 * H, gpus=2, tmp=tmp_path)  # fmt: skip
    _ran(cluster, alice, submitted=MIDNIGHT + 9 * H, started=MIDNIGHT + 10 * H, finished=MIDNIGHT + 11 * H,
         status="failed", reason="nonzero_exit", tmp=tmp_path)  # fmt: skip
    # nlp: 1 GPU on day 2 12:00-15:00, submitted at 11:30
    _ran(cluster, bob, submitted=MIDNIGHT + 11.5 * H, started=MIDNIGHT + 12 * H, finished=MIDNIGHT + 15 * H,
         tmp=tmp_path)  # fmt: skip
    TelemetryStore(cluster.factory).save_usage(
        AttemptUsage(across, 1, "box", 2, MIDNIGHT - 2 * H, MIDNIGHT + 2 * H, 8.0, 1.2, "measured", 0.6,
                     0.33, "EUR", 9000, None, 77.0, 240)
    )  # fmt: skip
    config = PolicyConfig(timezone="UTC", day_budget_gpu_h={"nlp": 4.0}, week_budget_gpu_h={"vision": 100.0})

    report = utilization_report(cluster.factory, MIDNIGHT + 20 * H, 2, "team", config, {"box:0": "A100"}, 4)

    rows = {row["key"]: row for row in report["rows"]}
    assert rows["vision"]["gpu_hours"] == pytest.approx(9.0)
    assert rows["nlp"]["gpu_hours"] == pytest.approx(3.0)
    # measured energy for the attempt that has it, the A100's 400 W estimate for the other
    assert rows["vision"]["energy_kwh"] == pytest.approx(1.2 + 0.4, abs=1e-3)
    assert rows["nlp"]["energy_kwh"] == pytest.approx(1.2, abs=1e-3)
    # off-peak (23:00-07:00): 3 of the 4 hours across midnight on 2 GPUs = 6 of 9 GPU-hours
    assert rows["vision"]["offpeak_share"] == pytest.approx(6 / 9, abs=1e-3)
    assert rows["nlp"]["offpeak_share"] == 0.0
    assert report["total_energy_kwh"] == pytest.approx(2.8, abs=1e-3)

    days = {(row["day"], row["team"]): row for row in report["by_day"]}
    assert set(days) == {("2026-03-04", "vision"), ("2026-03-05", "vision"), ("2026-03-05", "nlp")}
    assert days[("2026-03-04", "vision")]["gpu_hours"] == pytest.approx(4.0)
    assert days[("2026-03-05", "vision")]["gpu_hours"] == pytest.approx(5.0)
    assert days[("2026-03-04", "vision")]["energy_kwh"] == pytest.approx(0.6, abs=1e-3)
    assert days[("2026-03-04", "vision")]["p50_wait_s"] == 3600.0
    assert days[("2026-03-05", "vision")]["p90_wait_s"] == 3600.0
    assert days[("2026-03-05", "nlp")]["p50_wait_s"] == 1800.0

    quota = {row["team"]: row for row in report["quota"]}
    assert quota["nlp"]["day_used_gpu_h"] == pytest.approx(3.0)
    assert quota["nlp"]["day_share"] == pytest.approx(0.75)
    assert quota["vision"]["week_used_gpu_h"] == pytest.approx(9.0)

    rendered = utilization_tables(report)
    assert len(rendered.renderables) == 3


def test_a_task_sharing_a_gpu_counts_its_part_of_the_gpu_hours_energy_and_budget(
    cluster, make_identity, tmp_path
):
    # Given two quarter-GPU tasks of nlp on one A100 for 4 hours each (no measured usage)
    bob, _ = make_identity("bob", "nlp")
    for _ in range(2):
        _ran(cluster, bob, submitted=MIDNIGHT + 9 * H, started=MIDNIGHT + 10 * H, finished=MIDNIGHT + 14 * H,
             fraction=0.25, tmp=tmp_path)  # fmt: skip
    config = PolicyConfig(timezone="UTC", day_budget_gpu_h={"nlp": 4.0})

    report = utilization_report(cluster.factory, MIDNIGHT + 20 * H, 1, "team", config, {"box:0": "A100"}, 1)

    # Then 2 GPU-hours (not 8), a quarter of the A100's 400 W each, and half the day budget used
    [row] = report["rows"]
    assert row["gpu_hours"] == pytest.approx(2.0)
    assert row["energy_kwh"] == pytest.approx(2 * 0.1 * 4, abs=1e-3)
    [day] = report["by_day"]
    assert day["gpu_hours"] == pytest.approx(2.0)
    [quota] = report["quota"]
    assert quota["day_used_gpu_h"] == pytest.approx(2.0) and quota["day_share"] == pytest.approx(0.5)


def test_the_api_report_limits_members_to_their_team(cluster, make_identity, tmp_path):
    alice, token = make_identity("alice", "vision")
    bob, _ = make_identity("bob", "nlp")
    _ran(cluster, alice, submitted=MIDNIGHT, started=MIDNIGHT, finished=MIDNIGHT + H, tmp=tmp_path)
    _ran(cluster, bob, submitted=MIDNIGHT, started=MIDNIGHT, finished=MIDNIGHT + H, tmp=tmp_path)
    client = TestClient(create_app(cluster))
    body = client.get("/api/v1/reports/utilization?days=400", headers={"Authorization": f"Bearer {token}"})
    assert body.status_code == 422  # days are bounded
    body = client.get(
        "/api/v1/reports/utilization?days=366", headers={"Authorization": f"Bearer {token}"}
    ).json()
    assert {row["team"] for row in body["by_day"]} == {"vision"}
    assert {row["team"] for row in body["quota"]} <= {"vision"}


def test_the_morning_summary_lists_last_nights_tasks_failures_with_reasons_and_cost(
    cluster, make_identity, tmp_path
):
    alice, token = make_identity("alice", "vision")
    ok = _ran(cluster, alice, submitted=MIDNIGHT - 4 * H, started=MIDNIGHT - 3 * H, finished=MIDNIGHT + H,
              tmp=tmp_path)  # fmt: skip
    bad = _ran(cluster, alice, submitted=MIDNIGHT, started=MIDNIGHT + H, finished=MIDNIGHT + 2 * H,
               status="failed", reason="nonzero_exit", tmp=tmp_path)  # fmt: skip
    _ran(
        cluster,
        alice,
        submitted=MIDNIGHT - 30 * H,
        started=MIDNIGHT - 29 * H,
        finished=MIDNIGHT - 28 * H,
        tmp=tmp_path,
    )  # fmt: skip  (the night before: not in this summary)
    TelemetryStore(cluster.factory).save_usage(
        AttemptUsage(ok, 1, "box", 1, MIDNIGHT - 3 * H, MIDNIGHT + H, 4.0, 1.0, "measured", 1.0, 0.15,
                     "EUR", None, None, None, 0)
    )  # fmt: skip

    cluster.log_path(bad).parent.mkdir(parents=True, exist_ok=True)
    cluster.log_path(bad).write_text(
        f"==> nightshift task {bad} attempt 1 on GPUs 0 at 2026-03-05T01:00:00+00:00\n==> $ true\n"
        "epoch 3\nValueError: loss is nan\n"
        f"==> nightshift task {bad} attempt 1 ended: exit code 3 after 3600.0 s at 2026-03-05T02:00:00+00:00\n"
    )

    summary = morning_summary(
        cluster.factory, MIDNIGHT + 8 * H, "UTC", "EUR", printed=partial(failure_lines, cluster)
    )
    without_logs = morning_summary(cluster.factory, MIDNIGHT + 8 * H, "UTC", "EUR")

    assert [task["id"] for task in summary["succeeded"]] == [ok]
    assert [
        (task["id"], task["reason"], task["message"], task["last_line"]) for task in summary["failed"]
    ] == [(bad, "nonzero_exit", "exit code 3", "ValueError: loss is nan")]
    assert without_logs["failed"][0]["last_line"] is None
    assert summary["cost"] == pytest.approx(0.15)
    event = summary_event(summary)
    assert "1 succeeded, 1 failed" in event.text and "exit code 3 — ValueError: loss is nan" in event.text
    assert summary_table(summary).row_count == 2
    client = TestClient(create_app(cluster))
    body = client.get("/api/v1/reports/summary?hours=100000", headers={"Authorization": f"Bearer {token}"})
    assert body.status_code == 422
    body = client.get("/api/v1/reports/summary?hours=744", headers={"Authorization": f"Bearer {token}"})
    assert body.status_code == 200 and body.json()["currency"]


def test_reports_add_the_cpu_hours_of_jobs_that_ran_in_a_cgroup_prorated_to_the_window(
    cluster, make_identity, tmp_path
):
    alice, _ = make_identity("alice", "vision")
    bob, _ = make_identity("bob", "nlp")
    # vision: 2 GPUs 22:00-02:00, its processes used 2 CPU-hours; nlp: 1 GPU, no cgroup (CPU time unknown)
    across = _ran(cluster, alice, submitted=MIDNIGHT - 3 * H, started=MIDNIGHT - 2 * H,
                  finished=MIDNIGHT + 2 * H, gpus=2, tmp=tmp_path)  # fmt: skip
    _ran(
        cluster, bob, submitted=MIDNIGHT, started=MIDNIGHT + 12 * H, finished=MIDNIGHT + 15 * H, tmp=tmp_path
    )
    TelemetryStore(cluster.factory).save_usage(
        AttemptUsage(across, 1, "box", 2, MIDNIGHT - 2 * H, MIDNIGHT + 2 * H, 8.0, 1.2, "measured", 0.6,
                     0.33, "EUR", None, None, None, 0, cpu_s=2 * H)
    )  # fmt: skip
    config = PolicyConfig(timezone="UTC")
    now = MIDNIGHT + 20 * H

    by_team = utilization_report(cluster.factory, now, 2, "team", config, {}, 4)
    rows = {row["key"]: row for row in by_team["rows"]}
    assert rows["vision"]["cpu_hours"] == pytest.approx(2.0)
    assert rows["nlp"]["cpu_hours"] is None  # unknown, not zero
    assert by_team["total_cpu_hours"] == pytest.approx(2.0)
    # a window from midnight holds half of the attempt, so half of its CPU time, split over its 2 GPUs
    by_gpu = utilization_report(cluster.factory, now, 20 / 24, "gpu", config, {}, 4)
    gpus = {row["key"]: row["cpu_hours"] for row in by_gpu["rows"]}
    assert gpus == {"box:0": pytest.approx(0.5), "box:1": pytest.approx(0.5)}
    assert by_gpu["total_cpu_hours"] == pytest.approx(1.0)

    console = Console(width=200, record=True)
    console.print(utilization_tables(by_team))
    text = " ".join(console.export_text().split())  # the caption wraps
    assert "CPU-h" in text and "2.00 CPU-h where jobs ran in a cgroup" in text


def test_a_report_without_cgroup_jobs_says_nothing_of_cpu_time(cluster, make_identity, tmp_path):
    alice, _ = make_identity("alice", "vision")
    _ran(cluster, alice, submitted=MIDNIGHT, started=MIDNIGHT, finished=MIDNIGHT + H, tmp=tmp_path)
    report = utilization_report(cluster.factory, MIDNIGHT + 2 * H, 1, "team", PolicyConfig(), {}, 4)
    assert report["total_cpu_hours"] is None and report["rows"][0]["cpu_hours"] is None
    console = Console(width=200, record=True)
    console.print(utilization_tables(report))
    assert "where jobs ran in a cgroup" not in console.export_text()


def test_a_cpu_only_task_counts_as_a_task_with_its_cpu_time_and_no_gpu_hours(
    cluster, make_identity, tmp_path
):
    alice, _ = make_identity("alice", "vision")
    gpu_task = _ran(cluster, alice, submitted=MIDNIGHT, started=MIDNIGHT, finished=MIDNIGHT + H, tmp=tmp_path)
    cpu_task = _ran(
        cluster,
        alice,
        submitted=MIDNIGHT,
        started=MIDNIGHT + H,
        finished=MIDNIGHT + 2 * H,
        gpus=0,
        tmp=tmp_path,
    )
    store = TelemetryStore(cluster.factory)
    for task_id, start in ((gpu_task, MIDNIGHT), (cpu_task, MIDNIGHT + H)):
        store.save_usage(
            AttemptUsage(task_id, 1, "box", 0, start, start + H, 0.0, 0.0, "estimated", 0.0, 0.0, "EUR",
                         None, None, None, 0, cpu_s=0.5 * H)
        )  # fmt: skip

    report = utilization_report(
        cluster.factory, MIDNIGHT + 3 * H, 1, "team", PolicyConfig(), {"box:0": ""}, 4
    )
    by_gpu = utilization_report(cluster.factory, MIDNIGHT + 3 * H, 1, "gpu", PolicyConfig(), {}, 4)

    (row,) = report["rows"]
    assert (row["tasks"], row["succeeded"], row["gpu_hours"]) == (2, 2, pytest.approx(1.0))
    assert row["cpu_hours"] == pytest.approx(1.0)  # both tasks' CPU time
    assert [r["key"] for r in by_gpu["rows"]] == ["box:0"]  # a CPU-only task holds no GPU


def test_a_failure_run_again_says_which_task_took_its_place(cluster, make_identity, tmp_path):
    alice, _ = make_identity("alice", "vision")
    bad = _ran(cluster, alice, submitted=MIDNIGHT, started=MIDNIGHT + H, finished=MIDNIGHT + 2 * H,
               status="failed", reason="nonzero_exit", tmp=tmp_path)  # fmt: skip
    again = _ran(cluster, alice, submitted=MIDNIGHT + 3 * H, started=MIDNIGHT + 3 * H, finished=MIDNIGHT + 4 * H,
                 tmp=tmp_path)  # fmt: skip
    with transaction(cluster.factory) as session:
        session.execute(update(Task).where(Task.id == bad).values(replaced_by=again))

    summary = morning_summary(cluster.factory, MIDNIGHT + 8 * H, "UTC", "EUR")

    assert [(task["id"], task["replaced_by"]) for task in summary["failed"]] == [(bad, again)]
    assert f"(run again as #{again})" in summary_event(summary).text
    console = Console(record=True, width=200)
    console.print(summary_table(summary))
    assert f"run again as {again}" in console.export_text()
    content = json.dumps({"ok": True, "summary": summary})
    assert f"(run again as #{again})" in reply_for("night_summary", content, "en")
    assert f"（已重新运行为 #{again}）" in reply_for("night_summary", content, "zh")


def test_the_summary_notification_says_small_amounts_as_amounts() -> None:
    summary = {
        "succeeded": [], "failed": [], "cancelled": [], "gpu_hours": 0.0031, "energy_kwh": 0.0009,
        "cost": 0.0003, "currency": "EUR",
    }  # fmt: skip

    assert "0.0031 GPU-hours, 0.00090 kWh, 0.00030 EUR" in summary_event(summary).text


def test_the_report_says_how_much_of_each_reservation_its_team_used(cluster, make_identity, tmp_path):
    alice, _ = make_identity("alice", "vision")
    bob, _ = make_identity("bob", "nlp")
    admin, _ = make_identity("root", "ops", admin=True)
    history = cluster.reservations
    # box (4 GPUs) kept for vision 08:00-12:00 on day 2; nlp's from 14:00 was called off at 16:00
    history.add("box", "vision", MIDNIGHT + 8 * H, MIDNIGHT + 12 * H, admin.user)
    history.add("box", "nlp", MIDNIGHT + 14 * H, MIDNIGHT + 20 * H, admin.user)
    history.call_off("box", "nlp", MIDNIGHT + 16 * H)
    history.add("box", "vision", MIDNIGHT + 3 * 24 * H, MIDNIGHT + 4 * 24 * H, admin.user)  # after the period
    # vision: 2 GPUs 07:00-10:00 on box (2 h of it inside its reservation); nlp ran there 09:00-10:00 on 1
    _ran(cluster, alice, submitted=MIDNIGHT + 7 * H, started=MIDNIGHT + 7 * H, finished=MIDNIGHT + 10 * H, gpus=2,
         tmp=tmp_path)  # fmt: skip
    _ran(cluster, bob, submitted=MIDNIGHT + 9 * H, started=MIDNIGHT + 9 * H, finished=MIDNIGHT + 10 * H,
         tmp=tmp_path)  # fmt: skip
    report = partial(utilization_report, cluster.factory, MIDNIGHT + 20 * H, 1, "team", PolicyConfig(), {}, 4)

    everyone = report(node_gpus={"box": 4})["reservations"]
    vision = report(team="vision", node_gpus={"box": 4})["reservations"]

    assert [
        (r["team"], r["reserved_gpu_hours"], r["used_gpu_hours"], r["use"], r["called_off"]) for r in everyone
    ] == [
        ("vision", 16.0, 4.0, 0.25, False),  # 4 GPUs x 4 h; its 2 GPUs x 2 h inside (nlp's hour is not its)
        ("nlp", 8.0, 0.0, 0.0, True),  # 4 GPUs x 2 h until called off at 16:00
    ]
    assert [row["team"] for row in vision] == ["vision"] and vision[0]["created_by"] == "root"
    assert everyone[1]["end"].startswith(datetime.fromtimestamp(MIDNIGHT + 16 * H, UTC).isoformat()[:16])


def test_nightshift_report_lists_the_reservations_and_their_use_through_the_api(
    cluster, make_identity, tmp_path
):
    _admin, admin_token = make_identity("root", "ops", admin=True)
    make_identity("alice", "vision")
    cluster.nodes.publish(
        "box", [NodeGpu(i, "NVIDIA A100", 80 * 1024, 80 * 1024) for i in range(2)], 0, "nvml"
    )
    with TestClient(create_app(cluster)) as client:
        headers = {"Authorization": f"Bearer {admin_token}"}
        until = datetime.now(UTC) + timedelta(hours=2)
        reserved = client.post("/api/v1/nodes/box/reserve", params={"team": "vision", "until": until.isoformat()},
                               headers=headers)  # fmt: skip
        report = client.get("/api/v1/reports/utilization", params={"days": 1}, headers=headers).json()

    assert reserved.status_code == 200, reserved.text
    [row] = report["reservations"]
    assert (row["node"], row["team"], row["created_by"], row["used_gpu_hours"]) == (
        "box",
        "vision",
        "root",
        0.0,
    )
    assert 0 < row["reserved_gpu_hours"] < 0.01  # 2 GPUs for the moments since it began
    out = Console(width=160, record=True)
    out.print(utilization_tables(report))
    text = out.export_text()
    assert "reservations for teams" in text and "│ box  │ vision │" in text
