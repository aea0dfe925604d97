"""The usage report agrees with itself: rows add up to the totals whatever the grouping, waits are bucketed
in the cluster's days as `by_day` is, one team's report for admins, and bad input is a 4xx that says what
to fix."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families
from rich.console import Console
from sqlalchemy import update

from api.cli.report import utilization_tables
from api.main import create_app
from scheduler.clock import from_epoch_s
from scheduler.policy.config import PolicyConfig
from scheduler.reports import utilization_report
from scheduler.service import Cluster
from scheduler.store.db import transaction
from scheduler.store.tables import Attempt, Task
from scheduler.telemetry.accounting import AttemptUsage
from scheduler.telemetry.store import GpuPoint, TelemetryStore
from tests.conftest import opened_cluster
from tests.observability.test_reports import _ran

H = 3600.0
MIDNIGHT = datetime(2026, 3, 5, 0, 0, tzinfo=UTC).timestamp()  # Thursday 00:00 UTC


@pytest.fixture
def cluster(make_settings, redis_url: str, database_url: str) -> Iterator[Cluster]:
    """A cluster on SQLite and on PostgreSQL: the report's and the metrics' queries run on both."""
    with opened_cluster(make_settings(database_url=database_url), redis_url) as opened:
        yield opened


def _usage(task_id: int, start: float, end: float, gpus: int, kwh: float, cost: float, cpu_s: float | None):
    return AttemptUsage(task_id, 1, "box", gpus, start, end, gpus * (end - start) / H, kwh, "measured", 0.0,
                        cost, "EUR", None, None, None, 0, cpu_s=cpu_s)  # fmt: skip


def test_rows_are_rounded_as_the_totals_so_they_add_up(cluster, make_identity, tmp_path):
    alice, _ = make_identity("alice", "vision")
    bob, _ = make_identity("bob", "nlp")
    store = TelemetryStore(cluster.factory)
    for who, start in ((alice, MIDNIGHT), (alice, MIDNIGHT + H), (bob, MIDNIGHT + 2 * H)):
        task = _ran(cluster, who, submitted=start, started=start, finished=start + 60, tmp=tmp_path)
        store.save_usage(_usage(task, start, start + 60, 1, 0.0014, 0.0042, None))  # a short job's small use

    report = utilization_report(cluster.factory, MIDNIGHT + 3 * H, 1, "team", PolicyConfig(), {}, 4)

    rows = {row["key"]: row for row in report["rows"]}
    # rounded to 3 and 2 digits the rows said 0.003 kWh / 0.01 and 0.001 kWh / 0.0 against a total of 0.0042 / 0.0126
    assert rows["vision"]["energy_kwh"] == pytest.approx(0.0028) and rows["nlp"]["cost"] == pytest.approx(
        0.0042
    )
    assert sum(row["energy_kwh"] for row in rows.values()) == pytest.approx(
        report["total_energy_kwh"], abs=1e-4
    )
    assert sum(row["cost"] for row in rows.values()) == pytest.approx(report["total_cost"], abs=1e-4)
    assert report["total_cost"] == pytest.approx(0.0126)


def test_the_totals_are_the_same_whatever_the_grouping(cluster, make_identity, tmp_path):
    alice, _ = make_identity("alice", "vision")
    gpu_task = _ran(cluster, alice, submitted=MIDNIGHT, started=MIDNIGHT, finished=MIDNIGHT + H, gpus=2,
                    tmp=tmp_path)  # fmt: skip
    cpu_task = _ran(cluster, alice, submitted=MIDNIGHT, started=MIDNIGHT, finished=MIDNIGHT + H, gpus=0,
                    tmp=tmp_path)  # fmt: skip
    store = TelemetryStore(cluster.factory)
    store.save_usage(_usage(gpu_task, MIDNIGHT, MIDNIGHT + H, 2, 0.8, 0.24, 0.1 * H))
    store.save_usage(_usage(cpu_task, MIDNIGHT, MIDNIGHT + H, 0, 0.0, 0.0, 0.9 * H))  # a busy CPU-only job

    reports = {
        by: utilization_report(cluster.factory, MIDNIGHT + 2 * H, 1, by, PolicyConfig(), {}, 4)  # type: ignore[arg-type]
        for by in ("team", "user", "gpu")
    }

    totals = {
        by: tuple(
            report[name] for name in ("total_gpu_hours", "total_energy_kwh", "total_cost", "total_cpu_hours")
        )
        for by, report in reports.items()
    }
    # by GPU the CPU-only task has no row; its CPU-hour was missing from the total (0.1 instead of 1.0)
    assert totals["team"] == totals["user"] == totals["gpu"] == (2.0, 0.8, 0.24, pytest.approx(1.0))
    assert [row["key"] for row in reports["gpu"]["rows"]] == ["box:0", "box:1"]


def test_waits_over_time_are_bucketed_in_the_clusters_days_as_by_day_is(cluster, make_identity, tmp_path):
    alice, _ = make_identity("alice", "vision")
    # Shanghai is UTC+8: 10:00 UTC is 18:00 on the 5th there, 20:00 UTC is 04:00 on the 6th
    _ran(cluster, alice, submitted=MIDNIGHT + 9 * H, started=MIDNIGHT + 10 * H, finished=MIDNIGHT + 11 * H,
         tmp=tmp_path)  # fmt: skip
    _ran(cluster, alice, submitted=MIDNIGHT + 17 * H, started=MIDNIGHT + 20 * H, finished=MIDNIGHT + 21 * H,
         tmp=tmp_path)  # fmt: skip
    config = PolicyConfig(timezone="Asia/Shanghai")

    report = utilization_report(cluster.factory, MIDNIGHT + 22 * H, 7, "team", config, {}, 4)

    points = report["waits_over_time"]["points"]
    # in UTC days both starts fell on the 5th, one bucket with p90 3 h, while by_day has two days
    assert [(p["start"], p["tasks"], p["p90_wait_s"]) for p in points] == [
        ("2026-03-05T00:00:00+08:00", 1, 3600.0),
        ("2026-03-06T00:00:00+08:00", 1, 3 * 3600.0),
    ]
    assert [(row["day"], row["p90_wait_s"]) for row in report["by_day"]] == [
        ("2026-03-05", 3600.0),
        ("2026-03-06", 3 * 3600.0),
    ]


def test_hourly_waits_start_on_the_clusters_hours(cluster, make_identity, tmp_path):
    alice, _ = make_identity("alice", "vision")
    # India is UTC+5:30: a start at 10:10 UTC (15:40 there) is in the 15:00 hour, not the 10:00 UTC one
    _ran(cluster, alice, submitted=MIDNIGHT + 10 * H, started=MIDNIGHT + 10 * H + 600,
         finished=MIDNIGHT + 11 * H, tmp=tmp_path)  # fmt: skip
    config = PolicyConfig(timezone="Asia/Kolkata")

    report = utilization_report(cluster.factory, MIDNIGHT + 12 * H, 1, "team", config, {}, 4)

    assert [p["start"] for p in report["waits_over_time"]["points"]] == ["2026-03-05T15:00:00+05:30"]


def test_an_admin_may_ask_for_one_teams_report_and_a_member_only_for_theirs(cluster, make_identity, tmp_path):
    alice, alice_token = make_identity("alice", "vision")
    bob, _ = make_identity("bob", "nlp")
    _, admin_token = make_identity("root", "ops", admin=True)
    _ran(cluster, alice, submitted=MIDNIGHT, started=MIDNIGHT, finished=MIDNIGHT + H, tmp=tmp_path)
    _ran(cluster, bob, submitted=MIDNIGHT, started=MIDNIGHT, finished=MIDNIGHT + H, tmp=tmp_path)
    client = TestClient(create_app(cluster))

    def get(token: str, query: str):
        return client.get(
            f"/api/v1/reports/utilization?days=366&{query}", headers={"Authorization": f"Bearer {token}"}
        )

    nlp = get(admin_token, "team=nlp")
    assert nlp.status_code == 200 and nlp.json()["team"] == "nlp"
    assert [row["key"] for row in nlp.json()["rows"]] == ["nlp"]  # was every team: `team` was ignored
    assert {row["team"] for row in nlp.json()["quota"]} <= {"nlp"}
    assert {row["key"] for row in get(admin_token, "").json()["rows"]} == {"vision", "nlp"}
    unknown = get(admin_token, "team=nope")
    assert unknown.status_code == 404 and "team 'nope' not found" in unknown.json()["detail"]
    other = get(alice_token, "team=nlp")
    assert other.status_code == 403 and "your own team" in other.json()["detail"]  # was vision's, silently
    assert [row["key"] for row in get(alice_token, "team=vision").json()["rows"]] == ["vision"]


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ("days=0", "greater than 0"),
        ("days=-1", "greater than 0"),
        ("days=100000", "less than or equal to 366"),
        ("days=nan", "days must be a number of days"),  # was "less than or equal to 366"
        ("days=inf", "days must be a number of days"),
        ("by=nonsense", "'team', 'user' or 'gpu'"),
    ],
)
def test_bad_report_input_is_a_422_that_says_what_to_fix(cluster, make_identity, query, words):
    _, token = make_identity("alice", "vision")
    client = TestClient(create_app(cluster))
    answer = client.get(f"/api/v1/reports/utilization?{query}", headers={"Authorization": f"Bearer {token}"})
    assert answer.status_code == 422 and words in answer.json()["detail"]


def test_the_summary_refuses_a_look_back_that_is_not_a_number(cluster, make_identity):
    _, token = make_identity("alice", "vision")
    client = TestClient(create_app(cluster))
    answer = client.get("/api/v1/reports/summary?hours=nan", headers={"Authorization": f"Bearer {token}"})
    assert answer.status_code == 422 and "hours must be a number of hours" in answer.json()["detail"]


def _running(cluster, who, *, started: float, gpus: int, tmp):
    """A task running on `gpus` GPUs of node "box" since `started` (no usage stored yet: that comes at its end)."""
    task = cluster.submit(who, {"command": "true", "gpus": gpus, "workdir": str(tmp)})[0]
    cluster.queue.remove(task.id)
    with transaction(cluster.factory) as session:
        session.execute(
            update(Task)
            .where(Task.id == task.id)
            .values(status="running", node="box", gpu_indices=list(range(gpus)), started_at=from_epoch_s(started),
                    submitted_at=from_epoch_s(started), attempts_count=1)
        )  # fmt: skip
        session.add(Attempt(task_id=task.id, number=1, token=f"t{task.id}", node="box",
                            gpu_indices=list(range(gpus)), started_at=from_epoch_s(started)))  # fmt: skip
    return task.id


def test_a_running_tasks_energy_so_far_is_its_sampled_power_not_its_models_default(
    cluster, make_identity, tmp_path
):
    alice, _ = make_identity("alice", "vision")
    sampled = _running(cluster, alice, started=MIDNIGHT, gpus=2, tmp=tmp_path)
    # its worker's samples: 100 W on each GPU (an A100's default is 400 W)
    TelemetryStore(cluster.factory).add_gpu_samples(
        [
            GpuPoint("box", index, int(MIDNIGHT + minute * 60), sampled, 90.0, 1000, 100.0, 50.0)
            for minute in range(1, 100)
            for index in (0, 1)
        ]
    )
    models = {"box:0": "NVIDIA A100-SXM4-80GB", "box:1": "NVIDIA A100-SXM4-80GB"}

    report = utilization_report(cluster.factory, MIDNIGHT + 2 * H, 1, "team", PolicyConfig(), models, 4)

    # 2 GPUs x 2 h x 100 W (was 1.6 kWh at the A100's 400 W, and fell to 0.4 when the task ended)
    assert report["total_energy_kwh"] == pytest.approx(0.4)


def test_a_running_task_without_samples_is_estimated_from_the_sites_power_table(
    cluster, make_identity, tmp_path
):
    alice, _ = make_identity("alice", "vision")
    _running(cluster, alice, started=MIDNIGHT, gpus=1, tmp=tmp_path)
    config = PolicyConfig(gpu_power_w={"A100": 250.0, "": 300.0})  # the site's table (setting gpu_power_w)

    report = utilization_report(
        cluster.factory, MIDNIGHT + 2 * H, 1, "team", config, {"box:0": "NVIDIA A100-SXM4-80GB"}, 4
    )

    assert report["total_energy_kwh"] == pytest.approx(
        0.5
    )  # was 0.8: the built-in 400 W, as lost.py does not


def test_the_metrics_wait_of_a_retried_task_ends_at_its_first_start_as_the_reports_does(
    cluster, make_identity, tmp_path
):
    alice, _ = make_identity("alice", "vision")
    # waited 10 s, its first attempt ran 1000 s and failed, the retry started at once
    task = _ran(cluster, alice, submitted=MIDNIGHT, started=MIDNIGHT + 10, finished=MIDNIGHT + 1010,
                tmp=tmp_path)  # fmt: skip
    with transaction(cluster.factory) as session:
        session.execute(
            update(Task)
            .where(Task.id == task)
            .values(started_at=from_epoch_s(MIDNIGHT + 1010), finished_at=from_epoch_s(MIDNIGHT + 1100),
                    attempts_count=2)
        )  # fmt: skip
        session.add(Attempt(task_id=task, number=2, token="second", node="box", gpu_indices=[0],
                            started_at=from_epoch_s(MIDNIGHT + 1010), finished_at=from_epoch_s(MIDNIGHT + 1100),
                            outcome="succeeded"))  # fmt: skip

    text = TestClient(create_app(cluster)).get("/metrics").text
    families = {family.name: family for family in text_string_to_metric_families(text)}
    waits = {s.name: s.value for s in families["nightshift_task_wait_seconds"].samples if not s.labels}
    report = utilization_report(cluster.factory, MIDNIGHT + 2 * H, 1, "team", PolicyConfig(), {}, 4)

    assert waits == {
        "nightshift_task_wait_seconds_count": 1,
        "nightshift_task_wait_seconds_sum": 10.0,
    }  # was 1010
    assert report["rows"][0]["mean_wait_s"] == 10.0


def test_the_report_table_shows_small_amounts_instead_of_zeros(cluster, make_identity, tmp_path):
    alice, _ = make_identity("alice", "vision")
    task = _ran(cluster, alice, submitted=MIDNIGHT, started=MIDNIGHT, finished=MIDNIGHT + 60, tmp=tmp_path)
    TelemetryStore(cluster.factory).save_usage(_usage(task, MIDNIGHT, MIDNIGHT + 60, 1, 0.0014, 0.0042, None))
    report = utilization_report(cluster.factory, MIDNIGHT + H, 1, "team", PolicyConfig(), {}, 4)

    console = Console(width=200, record=True)
    console.print(utilization_tables(report))
    raw = console.export_text()
    text = " ".join(raw.split())

    # a minute on one GPU: 0.017 GPU-h, 0.0014 kWh, 0.0042 EUR (the table said 0.00 kWh and 0.00 EUR)
    assert "total 0.02 GPU-h" in text and "0.0014 kWh, 0.0042 EUR" in text
    assert "│ 0.0014 │   0.0042 │" in raw
