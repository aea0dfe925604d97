"""`nightshift cancel --mine [--status] [--name] [--tag]` (Slurm's `scancel -u $USER`): one's own live tasks
chosen by filters, shown and confirmed (or `--yes`), each cancelled; a teammate's are never among them."""

from __future__ import annotations

import json

import pytest
import typer

from api.cli import bulk
from api.cli.bulk import confirmed
from tests.cli.conftest import cli_as


def test_ones_own_live_tasks_are_cancelled_by_filter_only_with_yes_where_nobody_can_answer(
    cluster, a100_node, make_identity, monkeypatch, tmp_path
):
    _, alice = make_identity("alice", "vision")
    _, bob = make_identity("bob", "vision")

    def submit(nightshift, *args: str) -> int:
        return int(json.loads(nightshift("submit", "--json", *args, "--", "python", "t.py").stdout)["id"])

    with cli_as(cluster, bob, monkeypatch, tmp_path / "bob") as as_bob:
        bobs = submit(as_bob, "--tag", "junk")
    with cli_as(cluster, alice, monkeypatch, tmp_path / "alice") as nightshift:
        junk = [submit(nightshift, "--tag", "junk") for _ in range(3)]
        keep = submit(nightshift, "--name", "keep")
        unasked = nightshift("cancel", "--mine", "--tag", "junk")
        untouched = [cluster.tasks.get_any(i).status for i in junk]
        done = nightshift("cancel", "--mine", "--tag", "junk", "--yes")
        again = nightshift("cancel", "--mine", "--tag", "junk", "--yes")
        by_name = nightshift("cancel", "--mine", "--name", "kee*", "--status", "queued", "-y")
        mixed = nightshift("cancel", "12", "--mine")
        loose = nightshift("cancel", "--tag", "junk")
        bad_status = nightshift("cancel", "--mine", "--status", "failed", "--yes")

    assert unasked.exit_code == 2
    assert f"this would cancel 3 tasks ({junk[0]}-{junk[2]}): add --yes" in unasked.stderr
    assert untouched == ["queued"] * 3  # nothing without --yes
    assert done.exit_code == 0, done.output
    assert all(cluster.tasks.get_any(i).status == "cancelled" for i in junk)
    assert cluster.tasks.get_any(bobs).status == "queued"  # a teammate's junk is his
    assert "none of your tasks is queued or running with these filters" in again.stdout
    assert by_name.exit_code == 0 and cluster.tasks.get_any(keep).status == "cancelled"
    assert mixed.exit_code == 2 and "one way to choose" in mixed.stderr
    assert loose.exit_code == 2 and "give them with --mine" in loose.stderr
    assert bad_status.exit_code == 2 and "--status: queued or running" in bad_status.stderr


def test_at_a_terminal_the_person_is_asked(monkeypatch):
    asked: list[str] = []
    monkeypatch.setattr(bulk.sys.stdin, "isatty", lambda: True, raising=False)

    assert confirmed([12, 13, 14], yes=False, ask=lambda q: asked.append(q) or False) is False
    assert asked == ["cancel them?"]
    assert confirmed([12], yes=False, ask=lambda q: asked.append(q) or True) is True
    assert asked[-1] == "cancel it?"
    assert confirmed([12], yes=True, ask=lambda q: pytest.fail("--yes asks nothing")) is True
    monkeypatch.setattr(bulk.sys.stdin, "isatty", lambda: False, raising=False)
    with pytest.raises(typer.Exit):
        confirmed([12], yes=False)
