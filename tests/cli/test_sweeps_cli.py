"""`nightshift sweeps`: the team's sweeps newest first with their tasks by status; `--mine` the caller's,
`--limit` the newest few, `--offset` the next page (where the page lies on stderr), `--status` one status,
`--team` (admins) one team's, `--json` for scripts; bad values are refused with the API's reason."""

from __future__ import annotations

import json

from tests.cli.conftest import cli_as, lr_sweep_file


def test_the_teams_sweeps_are_listed_newest_first_and_mine_narrows_to_mine(
    cluster, a100_node, make_identity, monkeypatch, tmp_path
):
    _, alice = make_identity("alice", "vision")
    _, bob = make_identity("bob", "vision")
    _, carol = make_identity("carol", "nlp")
    spec = lr_sweep_file(tmp_path, "[0.1, 0.01, 0.001]")
    with cli_as(cluster, carol, monkeypatch, tmp_path / "carol") as nightshift:
        theirs = json.loads(nightshift("submit", "--json", str(spec)).output)
    with cli_as(cluster, bob, monkeypatch, tmp_path / "bob") as nightshift:
        bobs = json.loads(nightshift("submit", "--json", str(spec)).output)
    with cli_as(cluster, alice, monkeypatch, tmp_path / "alice") as nightshift:
        mine = json.loads(nightshift("submit", "--json", str(spec)).output)
        nightshift("cancel", str(mine["tasks"][0]["id"]))
        table = nightshift("sweeps")
        as_json = json.loads(nightshift("sweeps", "--json").output)
        only_mine = json.loads(nightshift("sweeps", "--mine", "--json").output)
        first_page = nightshift("sweeps", "--limit", "1", "--json")
        newest = json.loads(first_page.stdout)  # the footer goes to stderr: stdout is JSON alone
        refused = nightshift("sweeps", "--limit", "0")

    assert table.exit_code == 0, table.output
    lines = [line for line in table.output.splitlines() if "vision/" in line]
    assert [line.split()[1] for line in lines] == [str(mine["id"]), str(bobs["id"])]
    ids = [task["id"] for task in mine["tasks"]]
    assert f"3 tasks, {ids[0]}-{ids[-1]}" in lines[0] and "1 cancelled, 2 queued" in lines[0]
    assert "vision/alice" in lines[0] and "vision/bob" in lines[1]
    assert str(theirs["id"]) not in [line.split()[1] for line in lines] and "nlp/" not in table.output
    assert [sweep["id"] for sweep in as_json] == [mine["id"], bobs["id"]]
    assert [sweep["id"] for sweep in only_mine] == [mine["id"]]
    assert [sweep["id"] for sweep in newest] == [mine["id"]]
    assert "showing 1 of 2 (--offset 1 for the next)" in first_page.stderr
    assert refused.exit_code == 1 and "limit" in refused.output
    assert "greater than or equal to 1" in refused.output


def test_status_team_and_offset_narrow_and_page_the_list(
    cluster, a100_node, make_identity, monkeypatch, tmp_path
):
    _, alice = make_identity("alice", "vision")
    _, carol = make_identity("carol", "nlp")
    _, root = make_identity("root", "ops", admin=True)
    spec = lr_sweep_file(tmp_path, "[0.1, 0.01]")
    with cli_as(cluster, carol, monkeypatch, tmp_path / "carol") as nightshift:
        theirs = json.loads(nightshift("submit", "--json", str(spec)).output)
    with cli_as(cluster, alice, monkeypatch, tmp_path / "alice") as nightshift:
        made = [json.loads(nightshift("submit", "--json", str(spec)).output) for _ in range(3)]
        assert nightshift("cancel", "--sweep", str(made[0]["id"])).exit_code == 0
        cancelled = nightshift("sweeps", "--status", "cancelled", "--json")
        second_page = nightshift("sweeps", "--limit", "1", "--offset", "1", "--json")
        last_page = nightshift("sweeps", "--limit", "2", "--offset", "2")
        past_the_end = nightshift("sweeps", "--offset", "9")
        none_done = nightshift("sweeps", "--status", "done")
        unknown = nightshift("sweeps", "--status", "active")
        other_team = nightshift("sweeps", "--team", "nlp")
    with cli_as(cluster, root, monkeypatch, tmp_path / "root") as nightshift:
        nlp = json.loads(nightshift("sweeps", "--team", "nlp", "--json").stdout)

    assert [sweep["id"] for sweep in json.loads(cancelled.stdout)] == [made[0]["id"]]
    assert json.loads(cancelled.stdout)[0]["status"] == "cancelled"
    assert [sweep["id"] for sweep in json.loads(second_page.stdout)] == [made[1]["id"]]
    assert "showing 2-2 of 3 (--offset 2 for the next)" in second_page.stderr
    assert last_page.exit_code == 0 and str(made[0]["id"]) in last_page.stdout
    assert "showing 3-3 of 3" in last_page.stderr and "--offset" not in last_page.stderr
    assert past_the_end.exit_code == 0 and "nothing at --offset 9: 3 in all" in past_the_end.stderr
    assert none_done.exit_code == 0 and "no sweep matches these filters" in none_done.stderr
    assert unknown.exit_code == 1 and "'queued', 'running', 'done' or 'cancelled'" in unknown.stderr
    assert other_team.exit_code == 1
    assert "you can see only your own team's sweeps (team vision)" in other_team.stderr
    assert [sweep["id"] for sweep in nlp] == [theirs["id"]]
