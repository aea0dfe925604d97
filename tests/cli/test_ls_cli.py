"""`nightshift ls --team T`: a member asking for another team's tasks is told no (as `quota --team` is)."""

from __future__ import annotations

import json

from tests.cli.conftest import cli_as


def test_ls_of_another_team_is_an_error_for_a_member(
    cluster, a100_node, make_identity, monkeypatch, tmp_path
):
    _, token = make_identity("alice", "vision")
    with cli_as(cluster, token, monkeypatch, tmp_path / "client-home") as nightshift:
        submitted = nightshift("submit", "--after", "+2h", "--", "true")
        other = nightshift("ls", "--team", "local")
        quota = nightshift("quota", "--team", "local")
        own = nightshift("ls", "--team", "vision")

    assert submitted.exit_code == 0, submitted.output
    said = " ".join(other.output.split())
    assert other.exit_code == 1 and "error: you can see only your own team's tasks (team vision)" in said, (
        said
    )
    assert quota.exit_code == other.exit_code
    assert own.exit_code == 0 and "true" in own.output


def test_ls_mine_and_user_show_one_persons_tasks(cluster, a100_node, make_identity, monkeypatch, tmp_path):
    carol, _ = make_identity("carol", "vision")
    cluster.submit(carol, {"command": "echo carols-job", "workdir": str(tmp_path)})
    _, token = make_identity("alice", "vision")
    with cli_as(cluster, token, monkeypatch, tmp_path / "client-home") as nightshift:
        nightshift("submit", "--after", "+2h", "--", "echo alices-job")
        team = nightshift("ls", "--json")
        mine = nightshift("ls", "--mine", "--json")
        carols = nightshift("ls", "--user", "carol", "--json")
        both = nightshift("ls", "--mine", "--user", "carol")

    def commands(result) -> list[str]:
        assert result.exit_code == 0, result.output
        return [task["command"] for task in json.loads(result.stdout)]

    assert commands(team) == ["echo alices-job", "echo carols-job"]
    assert commands(mine) == ["echo alices-job"] and commands(carols) == ["echo carols-job"]
    assert both.exit_code == 2 and "--mine or --user NAME, not both" in both.output
