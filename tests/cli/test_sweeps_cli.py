"""`nightshift sweeps`: the team's sweeps newest first with their tasks by status; `--mine` the caller's,
`--limit` the newest few, `--json` for scripts; a bad `--limit` is refused with the API's reason."""

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
        newest = json.loads(nightshift("sweeps", "--limit", "1", "--json").output)
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
    assert refused.exit_code == 1 and "limit" in refused.output
    assert "greater than or equal to 1" in refused.output
