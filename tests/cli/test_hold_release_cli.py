"""`nightshift hold ID...` / `release ID...` (or `--sweep ID`), and `ls` showing who holds a task."""

from __future__ import annotations

import json

from tests.cli.conftest import cli_as, lr_sweep_file


def test_hold_and_release_from_the_command_line(cluster, a100_node, make_identity, monkeypatch, tmp_path):
    _, token = make_identity("alice", "vision")
    with cli_as(cluster, token, monkeypatch, tmp_path / "client-home") as nightshift:
        task_id = nightshift("submit", "--after", "+2h", "--", "true").output.split("task ")[1].split(" ")[0]
        held = nightshift("hold", task_id)
        listed = nightshift("ls")
        explained = nightshift("explain", task_id)
        released = nightshift("release", task_id)
        twice = nightshift("release", task_id)

    assert held.exit_code == 0 and f"task {task_id} held" in held.output, held.output
    assert "queued (held by alice)" in " ".join(listed.output.split())
    assert f"held by alice: nightshift release {task_id} lets it start" in " ".join(explained.output.split())
    assert released.exit_code == 0 and f"task {task_id} released" in released.output
    assert twice.exit_code == 1 and "is not held" in twice.output
    assert cluster.tasks.get_any(int(task_id)).held_by is None


def test_a_whole_sweep_is_held_and_released_from_the_command_line(
    cluster, a100_node, make_identity, monkeypatch, tmp_path
):
    _, token = make_identity("alice", "vision")
    spec = lr_sweep_file(tmp_path, "[0.1, 0.01, 0.001]")
    with cli_as(cluster, token, monkeypatch, tmp_path / "client-home") as nightshift:
        submitted = nightshift("submit", "--json", str(spec))
        sweep = json.loads(submitted.output)
        first = str(sweep["tasks"][0]["id"])
        cancelled = nightshift("cancel", first)
        held = nightshift("hold", "--sweep", str(sweep["id"]))
        released = nightshift("release", "--sweep", str(sweep["id"]))
        nothing = nightshift("release", "--sweep", str(sweep["id"]))
        both = nightshift("hold", first, "--sweep", str(sweep["id"]))
        neither = nightshift("release")

    assert submitted.exit_code == 0 and cancelled.exit_code == 0, submitted.output + cancelled.output
    said = " ".join(held.output.split())
    assert held.exit_code == 0 and f"sweep {sweep['id']}: 1 cancelled, 2 held" in said, said
    assert f"nightshift release --sweep {sweep['id']}" in said
    assert released.exit_code == 0 and f"sweep {sweep['id']}: 1 cancelled, 2 queued" in released.output
    assert nothing.exit_code == 1 and "has no held task to release" in " ".join(nothing.output.split())
    assert both.exit_code == 2 and neither.exit_code == 2 and "give task ids, or --sweep ID" in neither.output
    assert [task.held_by for task in cluster.tasks.with_status("queued")] == [None, None]


def test_cancelling_a_finished_sweep_says_nothing_is_left_to_cancel(
    cluster, a100_node, make_identity, monkeypatch, tmp_path
):
    _, token = make_identity("alice", "vision")
    spec = lr_sweep_file(tmp_path, "[0.1, 0.01, 0.001]")
    with cli_as(cluster, token, monkeypatch, tmp_path / "client-home") as nightshift:
        sweep = json.loads(nightshift("submit", "--json", str(spec)).output)
        cancelled = nightshift("cancel", "--sweep", str(sweep["id"]))
        again = nightshift("cancel", "--sweep", str(sweep["id"]))
        hold = nightshift("hold", "--sweep", str(sweep["id"]))

    assert cancelled.exit_code == 0 and f"sweep {sweep['id']}: 3 cancelled" in cancelled.output
    said = " ".join(again.output.split())
    assert again.exit_code == hold.exit_code == 1, said
    assert f"error: sweep {sweep['id']}: nothing to cancel (3 cancelled)" in said


def test_cancel_of_several_tasks_cancels_each_and_says_which_it_could_not(
    cluster, a100_node, make_identity, monkeypatch, tmp_path
):
    bob, _ = make_identity("bob", "nlp")
    theirs, _ = cluster.submit(bob, {"command": "true", "workdir": str(tmp_path)})
    _, token = make_identity("alice", "vision")
    with cli_as(cluster, token, monkeypatch, tmp_path / "client-home") as nightshift:
        ids = [
            json.loads(nightshift("submit", "--json", "--after", "+2h", "--", "true").output)["id"]
            for _ in "ab"
        ]
        several = nightshift("cancel", str(ids[0]), str(theirs.id), str(ids[1]))
        again = nightshift("cancel", *map(str, ids), "--json")
        neither = nightshift("cancel")

    assert several.exit_code == 1, several.output
    assert f"task {ids[0]} cancelled" in several.stdout and f"task {ids[1]} cancelled" in several.stdout
    assert f"error: task {theirs.id} not found" in " ".join(several.output.split())
    assert cluster.tasks.by_ids([theirs.id])[theirs.id].status == "queued"  # another team's: untouched
    assert again.exit_code == 1 and json.loads(again.stdout) == []  # both already cancelled: refused
    assert neither.exit_code == 2 and "give task ids, or --sweep ID" in neither.output


def _two_queued(nightshift) -> list[str]:
    """The ids of two tasks submitted to start in two hours (they stay queued)."""
    return [
        str(json.loads(nightshift("submit", "--json", "--after", "+2h", "--", "true").output)["id"])
        for _ in "ab"
    ]


def test_several_tasks_are_held_and_released_each_on_its_own(
    cluster, a100_node, make_identity, monkeypatch, tmp_path
):
    _, token = make_identity("alice", "vision")
    with cli_as(cluster, token, monkeypatch, tmp_path / "client-home") as nightshift:
        ids = _two_queued(nightshift)
        held = nightshift("hold", *ids)
        listed_held = nightshift("ls", "--held", "--json")
        again = nightshift("hold", *ids, "--json")
        released = nightshift("release", *ids, "--json")
        one = nightshift("hold", ids[0], "--json")

    assert held.exit_code == 0, held.output
    assert [line.split(":")[0] for line in held.stdout.splitlines()] == [f"task {i} held" for i in ids]
    assert sorted(task["id"] for task in json.loads(listed_held.stdout)) == sorted(map(int, ids))
    assert again.exit_code == 1 and json.loads(again.stdout) == []
    assert f"error: task {ids[0]} is already held by alice" in " ".join(again.output.split())
    assert released.exit_code == 0 and [t["id"] for t in json.loads(released.stdout)] == list(map(int, ids))
    assert one.exit_code == 0 and json.loads(one.stdout)["id"] == int(ids[0])  # one id: the task, as before
    assert [cluster.tasks.get_any(int(i)).held_by for i in ids] == ["alice", None]


def test_explain_takes_several_tasks_and_names_the_one_it_cannot_find(
    cluster, a100_node, make_identity, monkeypatch, tmp_path
):
    _, token = make_identity("alice", "vision")
    with cli_as(cluster, token, monkeypatch, tmp_path / "client-home") as nightshift:
        ids = _two_queued(nightshift)
        both = nightshift("explain", *ids, "--json")
        said = nightshift("explain", ids[0], "99999", ids[1])

    assert both.exit_code == 0 and [e["task_id"] for e in json.loads(both.stdout)] == list(map(int, ids))
    assert said.exit_code == 1
    headers = [line.split(":")[0] for line in said.stdout.splitlines() if line.startswith("task ")]
    assert headers == [f"task {ids[0]}", f"task {ids[1]}"]
    assert "error: task 99999 not found" in " ".join(said.output.split())


def test_ls_sweep_lists_one_sweeps_tasks(cluster, a100_node, make_identity, monkeypatch, tmp_path):
    _, token = make_identity("alice", "vision")
    spec = lr_sweep_file(tmp_path, "[0.1, 0.01]")
    with cli_as(cluster, token, monkeypatch, tmp_path / "client-home") as nightshift:
        sweep = json.loads(nightshift("submit", "--json", str(spec)).output)
        nightshift("submit", "--after", "+2h", "--", "true")  # a task of no sweep
        first = sweep["tasks"][0]["id"]
        nightshift("cancel", str(first))
        listed = nightshift("ls", "--sweep", str(sweep["id"]), "--json")
        cancelled = nightshift("ls", "--sweep", str(sweep["id"]), "--status", "cancelled", "--json")

    assert listed.exit_code == 0, listed.output
    assert sorted(task["id"] for task in json.loads(listed.stdout)) == sorted(t["id"] for t in sweep["tasks"])
    assert [task["id"] for task in json.loads(cancelled.stdout)] == [first]
