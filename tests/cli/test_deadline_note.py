"""`nightshift submit` and `nightshift change` note a deadline the task cannot meet even if it started as
early as it may: it is queued all the same (a deadline is a goal), and the person knows at once."""

from __future__ import annotations

from tests.cli.conftest import cli_as, lr_sweep_file


def test_a_deadline_out_of_reach_is_noted_after_the_submit_and_the_change(
    cluster, a100_node, make_identity, monkeypatch, tmp_path
):
    _, token = make_identity("alice", "vision")
    with cli_as(cluster, token, monkeypatch, tmp_path / "client-home") as nightshift:
        late = nightshift("submit", "--after", "+2h", "--deadline", "+150m", "--estimate", "60", "--", "true")
        fine = nightshift("submit", "--after", "+2h", "--deadline", "+4h", "--estimate", "60", "--", "true")
        task_id = fine.output.split("task ")[1].split(" ")[0]
        longer = nightshift("change", task_id, "--estimate", "180")

    assert late.exit_code == 0, late.output
    assert "submitted task" in late.output and ": queued" in late.output
    assert "note: it cannot finish by its deadline " in late.output
    assert "(not before), and its ~60 min estimate ends it around " in late.output
    assert fine.exit_code == 0 and "note:" not in fine.output
    assert longer.exit_code == 0, longer.output
    assert f"task {task_id} changed: estimated_minutes 60.0 -> 180.0" in longer.output
    assert "note: it cannot finish by its deadline " in longer.output


def test_a_sweep_that_cannot_meet_its_deadline_is_noted_once(
    cluster, a100_node, make_identity, monkeypatch, tmp_path
):
    _, token = make_identity("alice", "vision")
    monkeypatch.chdir(tmp_path)
    with cli_as(cluster, token, monkeypatch, tmp_path / "client-home") as nightshift:
        swept = nightshift(
            "submit", "--after", "+2h", "--deadline", "+150m", "--estimate", "60",
            str(lr_sweep_file(tmp_path, "[0.1, 0.01]")),
        )  # fmt: skip

    assert swept.exit_code == 0, swept.output
    assert "submitted sweep" in swept.output
    assert swept.output.count("note: it cannot finish by its deadline ") == 1
