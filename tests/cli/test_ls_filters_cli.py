"""`nightshift ls --since/--until/--name/--tag/--node`: history search from the shell, in the cluster's
zone, with "showing 2 of 3 (--limit to see more)" when the page is cut (on stderr: `--json` stays a list)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

from sqlalchemy import update

from api.cli.listing import page_footer
from scheduler.store.tables import Task
from tests.cli.conftest import cli_as


def _submit(cluster, who, name: str, days_ago: float = 0, **spec) -> int:
    """A queued task named `name`, its submission time moved `days_ago` into the past (in SQL)."""
    task, _ = cluster.submit(who, {"command": f"python {name}", "name": name, "gpus": 0, **spec})
    if days_ago:
        moved = datetime.now(UTC) - timedelta(days=days_ago)
        with cluster.factory.begin() as session:
            session.execute(update(Task).where(Task.id == task.id).values(submitted_at=moved))
    return task.id


def _ids(result) -> list[int]:
    assert result.exit_code == 0, result.output
    return [task["id"] for task in json.loads(result.stdout)]


def test_ls_since_until_name_tag_and_node_narrow_the_list(
    cluster, a100_node, make_identity, monkeypatch, tmp_path
):
    alice, token = make_identity("alice", "vision")
    old = _submit(cluster, alice, "train.py", days_ago=3, tags=["exp7"])
    recent = _submit(cluster, alice, "train.py", tags=["exp7"])
    other = _submit(cluster, alice, "eval.py", tags=["exp8"])
    assert cluster.tasks.mark_running(other, "e-1", "box-1", [0])
    with cli_as(cluster, token, monkeypatch, tmp_path / "client-home") as nightshift:
        since_yesterday = nightshift("ls", "--since", "yesterday", "--json")
        two_days_back = nightshift("ls", "--since", "-2d", "--name", "train.py", "--json")
        until_then = nightshift("ls", "--until", "2 days ago", "--json")
        by_prefix = nightshift("ls", "--name", "train*", "--json")
        by_tag = nightshift("ls", "--tag", "exp8", "--json")
        by_node = nightshift("ls", "--node", "box-1")
        window = nightshift("ls", "--since", "-4d", "--until", "today", "--tag", "exp7", "--json")

    assert _ids(since_yesterday) == [other, recent]
    assert _ids(two_days_back) == [recent]
    assert _ids(until_then) == [old]
    assert _ids(by_prefix) == [recent, old]
    assert _ids(by_tag) == [other]
    assert by_node.exit_code == 0 and "eval.py" in by_node.output and "train.py" not in by_node.output
    assert _ids(window) == [old]


def test_ls_says_how_many_match_when_the_page_is_cut_and_json_stays_a_list(
    cluster, a100_node, make_identity, monkeypatch, tmp_path
):
    alice, token = make_identity("alice", "vision")
    for _ in range(3):
        _submit(cluster, alice, "train.py")
    with cli_as(cluster, token, monkeypatch, tmp_path / "client-home") as nightshift:
        cut = nightshift("ls", "--name", "train.py", "--limit", "2")
        cut_json = nightshift("ls", "--name", "train.py", "--limit", "2", "--json")
        whole = nightshift("ls", "--name", "train.py", "--limit", "3")

    assert cut.exit_code == 0 and "showing 2 of 3 (--limit to see more)" in cut.stderr
    assert len(_ids(cut_json)) == 2 and "showing 2 of 3" in cut_json.stderr
    assert whole.exit_code == 0 and "showing" not in whole.output


def test_ls_offset_pages_on_and_says_where_the_page_lies(
    cluster, a100_node, make_identity, monkeypatch, tmp_path
):
    alice, token = make_identity("alice", "vision")
    ids = [_submit(cluster, alice, "train.py") for _ in range(5)]
    with cli_as(cluster, token, monkeypatch, tmp_path / "client-home") as nightshift:
        second = nightshift("ls", "--limit", "2", "--offset", "2", "--json")
        last = nightshift("ls", "--limit", "2", "--offset", "4", "--json")
        past_the_end = nightshift("ls", "--offset", "9")
        negative = nightshift("ls", "--offset", "-1")

    assert _ids(second) == [ids[2], ids[1]] and "showing 3-4 of 5 (--offset 4 for the next)" in second.stderr
    assert _ids(last) == [ids[0]] and "showing 5-5 of 5" in last.stderr and "next" not in last.stderr
    assert past_the_end.exit_code == 0 and "nothing at --offset 9: 5 in all" in past_the_end.stderr
    assert negative.exit_code == 2


def test_page_footer_groups_thousands_and_is_silent_for_a_whole_page():
    assert page_footer({"count": 50, "total": 1234}) == "showing 50 of 1,234 (--limit to see more)"
    assert page_footer({"count": 7, "total": 7}) is None


def test_ls_refuses_a_time_it_cannot_read_and_a_window_that_ends_before_it_starts(
    cluster, a100_node, make_identity, monkeypatch, tmp_path
):
    _, token = make_identity("alice", "vision")
    with cli_as(cluster, token, monkeypatch, tmp_path / "client-home") as nightshift:
        unreadable = nightshift("ls", "--since", "someday")
        backwards = nightshift("ls", "--since", "today", "--until", "-3d")

    assert unreadable.exit_code == 2 and "cannot read the time 'someday'" in unreadable.output
    said = " ".join(backwards.output.split())
    assert backwards.exit_code == 1 and "is after until" in said, said


def test_an_empty_list_says_so_and_show_prints_times_in_the_clusters_zone(
    cluster, a100_node, make_identity, monkeypatch, tmp_path
):
    alice, token = make_identity("alice", "vision")
    with cli_as(cluster, token, monkeypatch, tmp_path / "client-home") as nightshift:
        nothing_yet = nightshift("ls")
        task = _submit(cluster, alice, "train.py")
        no_match = nightshift("ls", "--name", "eval.py")
        as_json = nightshift("ls", "--name", "eval.py", "--json")
        shown = nightshift("show", str(task))

    assert nothing_yet.exit_code == 0 and "no tasks yet: nightshift submit -- COMMAND" in nothing_yet.stderr
    assert no_match.exit_code == 0 and "no task matches these filters" in no_match.stderr
    assert json.loads(as_json.stdout) == []  # scripts still get JSON alone on stdout
    submitted = cluster.tasks.get_any(task).submitted_at.replace(tzinfo=UTC)
    assert submitted.astimezone(cluster.zone).strftime("%Y-%m-%d %H:%M:%S") in shown.output
    assert not re.search(r"\dT\d", shown.output.split("submitted_at")[1].splitlines()[0])  # not raw ISO
