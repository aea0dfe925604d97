"""`nightshift compare`: what it says under the table when --sort names a metric the runs did not report."""

from __future__ import annotations

import json

from sqlalchemy import update

from scheduler.service import Cluster
from scheduler.store.tables import Task
from tests.cli.conftest import cli_as, lr_sweep_file


def _report(cluster: Cluster, task_id: int, metrics: dict[str, float]) -> None:
    """Task `task_id` succeeded after writing `metrics` (as its worker would have recorded it)."""
    with cluster.factory() as session:
        session.execute(update(Task).where(Task.id == task_id).values(status="succeeded", metrics=metrics))
        session.commit()


def test_a_sort_metric_no_task_reported_is_named_with_the_metrics_there_are(
    cluster, a100_node, make_identity, monkeypatch, tmp_path
):
    _, token = make_identity("alice", "vision")
    spec = lr_sweep_file(tmp_path, "[0.1, 0.01]")
    with cli_as(cluster, token, monkeypatch, tmp_path / "client-home") as nightshift:
        sweep = json.loads(nightshift("submit", "--json", str(spec)).output)
        for task, loss in zip(sweep["tasks"], (0.5, 0.2), strict=True):
            _report(cluster, task["id"], {"loss": loss, "acc": 1 - loss})
        typo = nightshift("compare", str(sweep["id"]), "--sort", "los")
        right = nightshift("compare", str(sweep["id"]), "--sort", "loss")

    said = " ".join(typo.output.split())
    assert typo.exit_code == 0, said
    assert "no task has reported a metric named 'los' (reported: loss, acc)" in said
    assert "has reported los yet" not in said  # not as if a run might still report it
    assert f"best by loss (min) of the runs that succeeded: task {sweep['tasks'][1]['id']}" in right.output
