"""`nightshift submit sweep.yaml --max-running 2`: a sweep that runs at most 2 of its tasks at once, and
how the CLI shows the tasks waiting for a slot."""

from __future__ import annotations

import json

from tests.cli.conftest import cli_as, lr_sweep_file


def test_submit_with_max_running_and_the_sweep_view(cluster, a100_node, make_identity, monkeypatch, tmp_path):
    _, token = make_identity("alice", "vision")
    spec = lr_sweep_file(tmp_path, "[0.1, 0.01, 0.001, 0.0001]")
    with cli_as(cluster, token, monkeypatch, tmp_path / "client-home") as nightshift:
        submitted = nightshift("submit", "--max-running", "2", str(spec))  # options go before the file
        sweep_id = submitted.output.split("sweep ")[1].split(" ")[0]
        sweep = json.loads(nightshift("submit", "--json", "--max-running", "3", str(spec)).output)
        changed = nightshift("change", "--sweep", sweep_id, "--priority", "high")
        waiting = cluster.sweeps.tasks_of(int(sweep_id))[3].id
        shown = nightshift("show", str(waiting))
        explained = nightshift("explain", str(waiting))
        single = nightshift("submit", "--max-running", "2", "--", "true")

    said = " ".join(submitted.output.split())
    assert submitted.exit_code == 0 and "4 tasks" in said and "at most 2 at a time" in said, said
    assert (sweep["max_running"], sweep["waiting"]) == (3, 1)
    said = " ".join(changed.output.split())
    assert f"sweep {sweep_id}: 2 queued, 2 waiting for a slot; at most 2 at a time" in said, said
    assert f"queued (waiting for a slot in sweep {sweep_id})" in " ".join(shown.output.split())
    reason = f"waiting for a slot: sweep {sweep_id} runs at most 2 at a time"
    assert reason in " ".join(explained.output.split())
    assert single.exit_code != 0 and "limits how many of a sweep's tasks" in " ".join(single.output.split())


def test_change_sweep_max_running_raises_lifts_and_is_refused_on_a_single_task(
    cluster, a100_node, make_identity, monkeypatch, tmp_path
):
    _, token = make_identity("alice", "vision")
    spec = lr_sweep_file(tmp_path, "[0.1, 0.01, 0.001, 0.0001]")
    with cli_as(cluster, token, monkeypatch, tmp_path / "client-home") as nightshift:
        submitted = nightshift("submit", "--json", "--max-running", "1", str(spec))
        sweep_id = str(json.loads(submitted.output)["id"])
        raised = nightshift("change", "--sweep", sweep_id, "--max-running", "3")
        after_raise = cluster.sweeps.get_any(int(sweep_id))
        lifted = nightshift("change", "--sweep", sweep_id, "--max-running", "0", "--json")
        one = cluster.sweeps.tasks_of(int(sweep_id))[0].id
        on_a_task = nightshift("change", str(one), "--max-running", "2")

    said = " ".join(raised.output.split())
    assert raised.exit_code == 0 and "at most 3 at a time" in said and "changed: max_running" in said, said
    assert after_raise.max_running == 3
    assert lifted.exit_code == 0 and json.loads(lifted.output)["max_running"] is None
    assert json.loads(lifted.output)["waiting"] == 0  # no limit: every task admitted
    assert on_a_task.exit_code == 2 and "give it with --sweep ID" in " ".join(on_a_task.output.split())
