"""`nightshift submit --like ID`: an earlier task of yours run again, changed by options or a new command."""

from __future__ import annotations

from tests.cli.conftest import cli_as


def _new_id(output: str) -> int:
    return int(output.split("submitted task ")[1].split(" ")[0])


def test_a_task_runs_again_with_its_own_spec_changed_by_the_options_given(
    cluster, a100_node, make_identity, monkeypatch, tmp_path
):
    _, token = make_identity("alice", "vision")
    workdir = tmp_path / "exp"
    workdir.mkdir()
    with cli_as(cluster, token, monkeypatch, tmp_path / "client-home") as nightshift:
        monkeypatch.chdir(workdir)
        first = nightshift("submit", "--gpus", "1", "--estimate", "5", "--retries", "2", "--after", "+2h",
                           "--", "python", "train.py", "--lr", "0.1")  # fmt: skip
        monkeypatch.chdir(tmp_path)  # asked again from elsewhere
        again = nightshift("submit", "--like", str(_new_id(first.output)), "--gpus", "2")
        other = nightshift("submit", "--like", str(_new_id(first.output)), "--", "python", "eval.py")

    assert first.exit_code == 0 and again.exit_code == 0 and other.exit_code == 0, again.output
    original = cluster.tasks.get_any(_new_id(first.output))
    rerun = cluster.tasks.get_any(_new_id(again.output))
    assert rerun.id != original.id and rerun.status == "queued"
    assert (rerun.command, rerun.name, rerun.gpus) == ("python train.py --lr 0.1", "train.py", 2)
    for key in ("workdir", "estimated_minutes", "retries", "not_before"):  # its own, not where it was asked
        assert rerun.spec[key] == original.spec[key], key
    changed = cluster.tasks.get_any(_new_id(other.output))
    assert (changed.command, changed.name, changed.gpus) == ("python eval.py", "eval.py", 1)


def test_a_time_that_has_passed_is_left_out_and_said(
    cluster, a100_node, make_identity, monkeypatch, tmp_path
):
    _, token = make_identity("alice", "vision")
    with cli_as(cluster, token, monkeypatch, tmp_path / "client-home") as nightshift:
        first = nightshift("submit", "--after", "2020-01-01T09:00:00+00:00", "--", "true")
        again = nightshift("submit", "--like", str(_new_id(first.output)))

    assert again.exit_code == 0, again.output
    assert (
        "as task" in again.output
        and "its not_before (2020-01-01T09:00:00+00:00) has passed: left out"
        in " ".join(again.output.split())
    )
    assert cluster.tasks.get_any(_new_id(again.output)).spec["not_before"] is None


def test_clear_runs_it_again_without_a_field_it_had_and_is_refused_where_it_means_nothing(
    cluster, a100_node, make_identity, monkeypatch, tmp_path
):
    _, token = make_identity("alice", "vision")
    with cli_as(cluster, token, monkeypatch, tmp_path / "client-home") as nightshift:
        first = nightshift("submit", "--time-limit", "120", "--priority", "high", "--", "python", "train.py")
        first_id = _new_id(first.output)
        again = nightshift("submit", "--like", str(first_id), "--clear", "time-limit", "--clear", "priority")
        without_like = nightshift("submit", "--clear", "time-limit", "--", "true")
        both = nightshift("submit", "--like", str(first_id), "--clear", "time-limit", "--time-limit", "30")
        unknown = nightshift("submit", "--like", str(first_id), "--clear", "gpus")

    assert again.exit_code == 0, again.output
    rerun = cluster.tasks.get_any(_new_id(again.output))
    assert rerun.spec["time_limit_minutes"] is None and rerun.priority == "normal"
    assert rerun.command == "python train.py"
    said = " ".join(again.output.split())
    assert f"as task {first_id}, but without its time_limit_minutes (120.0)" in said, said
    assert without_like.exit_code == 2 and "give it with --like ID" in without_like.output
    assert both.exit_code == 2 and "time_limit_minutes: a new value, or --clear" in both.output
    assert unknown.exit_code == 2 and "cannot clear gpus" in " ".join(unknown.output.split())
    assert cluster.tasks.count_by_status() == {"queued": 2}  # the first and its rerun, nothing else


def test_another_teams_task_cannot_be_run_again_and_a_spec_file_does_not_mix_with_like(
    cluster, a100_node, make_identity, monkeypatch, tmp_path
):
    _, bob = make_identity("bob", "nlp")
    _, alice = make_identity("alice", "vision")
    with cli_as(cluster, bob, monkeypatch, tmp_path / "bob-home") as nightshift:
        bobs = _new_id(nightshift("submit", "--", "echo", "secret").output)
    spec_file = tmp_path / "job.yaml"
    spec_file.write_text("command: true\n")
    with cli_as(cluster, alice, monkeypatch, tmp_path / "alice-home") as nightshift:
        refused = nightshift("submit", "--like", str(bobs))
        mixed = nightshift("submit", "--like", str(bobs), str(spec_file))

    assert refused.exit_code == 1 and f"task {bobs} not found" in refused.output
    assert mixed.exit_code != 0
    assert cluster.tasks.count_by_status() == {"queued": 1}
