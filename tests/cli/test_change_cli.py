"""`nightshift change ID --priority ... --now ...`: a queued task's timing changed from the command line, and
a running task's time limit."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

from scheduler.clock import now_ms
from scheduler.store.queue import announced_time_limit
from tests.cli.conftest import cli_as, lr_sweep_file


def test_nightshift_change_from_the_command_line(cluster, a100_node, make_identity, monkeypatch, tmp_path):
    _, token = make_identity("alice", "vision")
    with cli_as(cluster, token, monkeypatch, tmp_path / "client-home") as nightshift:
        task_id = nightshift("submit", "--after", "+2h", "--", "true").output.split("task ")[1].split(" ")[0]
        changed = nightshift("change", task_id, "--priority", "high", "--tonight", "--time-limit", "30")
        started_now = nightshift("change", task_id, "--now")
        same_again = nightshift("change", task_id, "--priority", "high", "--anytime")
        nothing = nightshift("change", task_id)
        both = nightshift("change", task_id, "--now", "--after", "23:00")
        gpus = nightshift("change", task_id, "--priority", "bogus")

    assert changed.exit_code == 0, changed.output
    assert f"task {task_id} changed: priority normal -> high, offpeak false -> true, " in changed.output
    assert "time_limit_minutes none -> 30.0" in changed.output
    assert started_now.exit_code == 0, started_now.output
    assert " -> none, offpeak true -> false" in started_now.output and "not_before " in started_now.output
    assert same_again.exit_code == 0 and f"task {task_id}: nothing to change" in same_again.output
    assert cluster.tasks.get_any(int(task_id)).revision == 2  # the same values again stored nothing
    row = cluster.tasks.get_any(int(task_id))
    assert (row.priority, row.spec["offpeak"], row.spec["not_before"], row.spec["time_limit_minutes"]) == (
        "high",
        False,
        None,
        30.0,
    )
    assert nothing.exit_code == 2 and "nothing to change" in nothing.output
    assert both.exit_code == 2 and "not with --after or --tonight" in both.output
    assert gpus.exit_code == 1 and "priority" in gpus.output


def test_clear_puts_a_field_back_to_its_default_on_a_task_and_a_sweep(
    cluster, a100_node, make_identity, monkeypatch, tmp_path
):
    _, token = make_identity("alice", "vision")
    spec = lr_sweep_file(tmp_path, "[0.1, 0.01]")
    with cli_as(cluster, token, monkeypatch, tmp_path / "client-home") as nightshift:
        task_id = (
            nightshift("submit", "--after", "+2h", "--time-limit", "30", "--", "true")
            .output.split("task ")[1]
            .split(" ")[0]
        )
        sweep = json.loads(nightshift("submit", "--json", "--time-limit", "45", str(spec)).output)
        cleared = nightshift("change", task_id, "--clear", "time-limit", "--clear", "after")
        swept = nightshift("change", "--sweep", str(sweep["id"]), "--clear", "time_limit_minutes")
        both = nightshift("change", task_id, "--clear", "estimate", "--estimate", "5")
        unknown = nightshift("change", task_id, "--clear", "command")

    assert cleared.exit_code == 0, cleared.output
    said = " ".join(cleared.output.split())
    assert "time_limit_minutes 30.0 -> none" in said and "not_before " in said, said
    row = cluster.tasks.get_any(int(task_id))
    assert (row.spec["time_limit_minutes"], row.spec["not_before"]) == (None, None)
    assert swept.exit_code == 0, swept.output
    in_sweep = [t for t in cluster.tasks.with_status("queued") if t.id != int(task_id)]
    assert [t.spec["time_limit_minutes"] for t in in_sweep] == [None, None]
    assert both.exit_code == 2 and "estimated_minutes: a new value, or --clear" in both.output
    assert unknown.exit_code == 2 and "cannot clear command" in " ".join(unknown.output.split())


def test_a_whole_sweep_is_changed_from_the_command_line(
    cluster, a100_node, make_identity, monkeypatch, tmp_path
):
    _, token = make_identity("alice", "vision")
    spec = lr_sweep_file(tmp_path, "[0.1, 0.01]")
    with cli_as(cluster, token, monkeypatch, tmp_path / "client-home") as nightshift:
        sweep = json.loads(nightshift("submit", "--json", str(spec)).output)
        changed = nightshift("change", "--sweep", str(sweep["id"]), "--priority", "low", "--tonight")
        both = nightshift("change", "1", "--sweep", str(sweep["id"]), "--priority", "low")

    said = " ".join(changed.output.split())
    assert changed.exit_code == 0 and f"sweep {sweep['id']}: 2 queued; changed: offpeak, priority" in said, (
        said
    )
    assert [(t.priority, t.spec["offpeak"]) for t in cluster.tasks.with_status("queued")] == [
        ("low", True)
    ] * 2
    assert both.exit_code == 2 and "give task ids, or --sweep ID" in both.output


def test_ask_shows_the_change_card_and_the_command_that_does_it(
    cluster, a100_node, make_identity, monkeypatch, tmp_path
):
    _, token = make_identity("alice", "vision")
    with cli_as(cluster, token, monkeypatch, tmp_path / "client-home") as nightshift:
        task_id = nightshift("submit", "--after", "+2h", "--", "true").output.split("task ")[1].split(" ")[0]
        asked = nightshift("ask", f"make {task_id} urgent and start it now")
        unchanged = cluster.tasks.get_any(int(task_id)).priority
        line = asked.output.split("to change it: ")[1].strip()
        done = nightshift(*line.split()[1:])

    assert asked.exit_code == 0, asked.output
    assert "• priority: normal → urgent" in asked.output and unchanged == "normal"
    assert line == f"nightshift change {task_id} --now --priority urgent"
    assert done.exit_code == 0, done.output
    row = cluster.tasks.get_any(int(task_id))
    assert (row.priority, row.spec["not_before"]) == ("urgent", None)


def test_submit_takes_a_deadline_as_change_does(cluster, a100_node, make_identity, monkeypatch, tmp_path):
    _, token = make_identity("alice", "vision")
    with cli_as(cluster, token, monkeypatch, tmp_path / "client-home") as nightshift:
        submitted = nightshift("submit", "--after", "+2h", "--deadline", "+30h", "--", "true")
        unreadable = nightshift("submit", "--deadline", "someday", "--", "true")

    assert submitted.exit_code == 0, submitted.output
    task_id = int(submitted.output.split("task ")[1].split(" ")[0])
    spec = cluster.tasks.get_any(task_id).spec
    hours = datetime.fromisoformat(spec["deadline"]) - datetime.fromisoformat(spec["not_before"])
    assert hours == timedelta(hours=28)
    assert unreadable.exit_code == 2 and "cannot read the time" in unreadable.output


def test_a_running_tasks_time_limit_is_changed_from_the_command_line(
    cluster, a100_node, make_identity, monkeypatch, tmp_path
):
    # Given alice's task, claimed and running on box-1 with a 10-minute limit
    who, token = make_identity("alice", "vision")
    task, _ = cluster.submit(who, {"command": "sleep 60", "time_limit_minutes": 10, "workdir": str(tmp_path)})
    assert cluster.queue.assign(task.id, a100_node, [0], now_ms())
    claim = cluster.queue.claim(a100_node, now_ms(), 60_000)
    assert claim is not None
    assert cluster.tasks.mark_running(task.id, claim.token, a100_node, claim.gpu_indices) == 1

    with cli_as(cluster, token, monkeypatch, tmp_path / "client-home") as nightshift:
        longer = nightshift("change", str(task.id), "--time-limit", "240")
        priority = nightshift("change", str(task.id), "--priority", "high")

    # Then the limit changes, and the worker holding its claim is told; its priority cannot change now
    assert longer.exit_code == 0, longer.output
    assert f"task {task.id} changed: time_limit_minutes 10.0 -> 240.0" in longer.output
    assert cluster.tasks.get_any(task.id).spec["time_limit_minutes"] == 240.0
    told = cluster.queue.client.get(cluster.queue.keys.time_limit(task.id))
    assert announced_time_limit(told) == (claim.token, 240 * 60.0)
    assert priority.exit_code == 1
    assert f"task {task.id} is running: priority can no longer change" in " ".join(priority.output.split())


def test_change_makes_a_queued_task_wait_for_another_and_refuses_a_loop(
    cluster, a100_node, make_identity, monkeypatch, tmp_path
):
    _, token = make_identity("alice", "vision")
    with cli_as(cluster, token, monkeypatch, tmp_path / "client-home") as nightshift:
        first, second = (
            nightshift("submit", "--after", "+2h", "--", "true").output.split("task ")[1].split(" ")[0]
            for _ in range(2)
        )
        waits = nightshift("change", second, "--depends-on", first, "--after-any", first)
        loop = nightshift("change", first, "--depends-on", second)
        cleared = nightshift("change", second, "--clear", "depends-on")

    assert waits.exit_code == 0, waits.output
    said = " ".join(waits.output.split())
    assert f"depends_on none -> {first}" in said and f"depends_on_any none -> {first}" in said
    assert loop.exit_code == 1
    assert f"task {second} already waits for task {first}" in " ".join(loop.output.split())
    assert cluster.tasks.get_any(int(first)).spec.get("depends_on") in (None, [])
    assert cleared.exit_code == 0 and f"depends_on {first} -> none" in " ".join(cleared.output.split())
    assert cluster.tasks.get_any(int(second)).spec["depends_on_any"] == [int(first)]


def test_the_command_a_change_card_shows_waits_for_its_tasks_and_clears_what_it_takes_away(
    cluster, a100_node, make_identity, monkeypatch, tmp_path
):
    _, token = make_identity("alice", "vision")
    with cli_as(cluster, token, monkeypatch, tmp_path / "client-home") as nightshift:
        first, second = (
            nightshift("submit", "--after", "+2h", "--time-limit", "30", "--", "true")
            .output.split("task ")[1]
            .split(" ")[0]
            for _ in range(2)
        )
        lines = []
        for request in (f"make {second} wait for {first}", f"remove the time limit of task {second}"):
            asked = nightshift("ask", request)
            lines.append(asked.output.split("to change it: ")[1].strip())
            assert nightshift(*lines[-1].split()[1:]).exit_code == 0, lines[-1]

    assert lines == [
        f"nightshift change {second} --depends-on {first}",
        f"nightshift change {second} --clear time-limit",
    ]
    spec = cluster.tasks.get_any(int(second)).spec
    assert (spec["depends_on"], spec.get("time_limit_minutes")) == ([int(first)], None)


def test_several_tasks_are_changed_each_on_its_own_and_a_refusal_is_named(
    cluster, a100_node, make_identity, monkeypatch, tmp_path
):
    _, token = make_identity("alice", "vision")
    with cli_as(cluster, token, monkeypatch, tmp_path / "client-home") as nightshift:
        ids = [
            nightshift("submit", "--after", "+2h", "--", "true").output.split("task ")[1].split(" ")[0]
            for _ in range(2)
        ]
        nightshift("cancel", ids[1])
        several = nightshift("change", ids[0], ids[1], "99999", "--priority", "high")
        as_json = nightshift("change", ids[0], ids[0], "--priority", "urgent", "--json")

    assert several.exit_code == 1
    said = " ".join(several.output.split())
    assert f"task {ids[0]} changed: priority normal -> high" in said
    assert f"task {ids[1]} already cancelled; only a queued or running task can be changed" in said
    assert "task 99999 not found" in said
    # one id given twice: changed once, printed as the task alone
    assert as_json.exit_code == 0 and json.loads(as_json.stdout)["priority"] == "urgent"
    assert cluster.tasks.get_any(int(ids[0])).priority == "urgent"


def test_change_adds_and_takes_away_tags_keeping_the_others(
    cluster, a100_node, make_identity, monkeypatch, tmp_path
):
    _, token = make_identity("alice", "vision")
    with cli_as(cluster, token, monkeypatch, tmp_path / "client-home") as nightshift:
        submitted = nightshift("submit", "--after", "+2h", "--tag", "base", "--tag", "old", "--", "true")
        task_id = submitted.output.split("task ")[1].split(" ")[0]
        changed = nightshift("change", task_id, "--tag", "exp7", "--untag", "old")
        missing = nightshift("change", task_id, "--untag", "nope")
        on_a_sweep = nightshift("change", "--sweep", "1", "--tag", "exp7")

    assert changed.exit_code == 0, changed.output
    assert "tags" in changed.output
    assert cluster.tasks.get_any(int(task_id)).spec["tags"] == ["base", "exp7"]
    assert missing.exit_code == 1 and "has no tag 'nope' to take away" in missing.output
    assert on_a_sweep.exit_code == 2 and "not --sweep" in on_a_sweep.output
