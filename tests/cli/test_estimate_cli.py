"""`nightshift estimate` for a new task: when it would start (tonight, or after a time) and what its energy
would cost, through the real API."""

from __future__ import annotations

import json
import re
from datetime import datetime

from tests.cli.conftest import cli_as


def test_an_estimate_for_tonight_starts_off_peak_and_is_priced(
    cluster, a100_node, make_identity, monkeypatch, tmp_path
):
    _, token = make_identity("alice", "vision")
    with cli_as(cluster, token, monkeypatch, tmp_path / "client-home") as nightshift:
        tonight = nightshift("estimate", "--gpus", "2", "--estimate", "60", "--tonight", "--json")
        later = nightshift("estimate", "--gpus", "2", "--after", "2030-01-07T12:00", "--json")
        bad = nightshift("estimate", "--after", "someday")

    assert tonight.exit_code == 0, tonight.output
    answer = json.loads(tonight.output)
    local = datetime.fromisoformat(answer["start"]).astimezone(cluster.zone)
    assert local.hour >= 23 or local.hour < 7, local
    assert answer["energy_kwh"] > 0 and answer["energy_cost"] is not None
    assert datetime.fromisoformat(json.loads(later.output)["start"]).astimezone(cluster.zone).replace(
        tzinfo=None
    ) == datetime(2030, 1, 7, 12)
    assert bad.exit_code == 2 and "cannot read the time 'someday'" in bad.output


def test_an_estimate_says_the_run_time_it_assumed_and_where_it_came_from(
    cluster, a100_node, make_identity, monkeypatch, tmp_path
):
    _, token = make_identity("alice", "vision")
    with cli_as(cluster, token, monkeypatch, tmp_path / "client-home") as nightshift:
        limited = nightshift("estimate", "--gpus", "1", "--name", "train.py", "--time-limit", "30")
        unseen = nightshift("estimate", "--gpus", "1", "--name", "train.py")

    assert limited.exit_code == 0, limited.output
    assert "(wait none)" in limited.output and "assumed run 30 min (time limit)" in limited.output
    assert "assumed run 60 min (default)" in unseen.output


def test_logs_of_a_task_that_never_ran_say_so_and_an_estimate_of_a_queued_task_reads_as_words(
    cluster, a100_node, make_identity, monkeypatch, tmp_path
):
    _, token = make_identity("alice", "vision")
    with cli_as(cluster, token, monkeypatch, tmp_path / "client-home") as nightshift:
        later = nightshift("submit", "--after", "2030-01-07T12:00", "--", "echo", "later")
        waiting = later.output.split("task ")[1].split(" ")[0]
        gone = nightshift("submit", "--", "echo", "gone").output.split("task ")[1].split(" ")[0]
        nightshift("cancel", gone)
        logs = nightshift("logs", gone)
        estimate = nightshift("estimate", waiting)

    assert logs.exit_code == 0
    assert f"task {gone} has no output: it never ran (cancelled: cancelled by alice)" in " ".join(
        logs.output.split()
    )
    assert re.search(r"\(wait ~\d+(\.\d)? d\)", estimate.output), (
        estimate.output
    )  # days away, not "~1964 min"


def test_an_estimate_for_a_task_that_waits_for_another_starts_after_it(
    cluster, a100_node, make_identity, monkeypatch, tmp_path
):
    _, token = make_identity("alice", "vision")
    with cli_as(cluster, token, monkeypatch, tmp_path / "client-home") as nightshift:
        parent = nightshift("submit", "--after", "2030-01-07T12:00", "--estimate", "60", "--", "sleep", "1")
        parent_id = parent.output.split("task ")[1].split(" ")[0]
        after = nightshift("estimate", "--depends-on", parent_id, "--json")

    start = datetime.fromisoformat(json.loads(after.output)["start"]).astimezone(cluster.zone)
    assert start.replace(tzinfo=None) == datetime(2030, 1, 7, 13, 0), after.output  # when its parent ends


def test_an_estimate_on_a_gpu_model_or_node_waits_for_those_gpus(
    cluster, a100_node, make_identity, monkeypatch, tmp_path
):
    _, token = make_identity("alice", "vision")
    with cli_as(cluster, token, monkeypatch, tmp_path / "client-home") as nightshift:
        on_a100 = nightshift("estimate", "--gpus", "1", "--gpu-model", "a100", "--json")
        on_h100 = nightshift("estimate", "--gpus", "1", "--gpu-model", "H100")

    assert on_a100.exit_code == 0 and json.loads(on_a100.output)["reason"] == "starts now", on_a100.output
    assert on_h100.exit_code == 0 and "no GPU model matches 'H100'" in on_h100.output, on_h100.output
