"""`nightshift ls --team T`: a member asking for another team's tasks is told no (as `quota --team` is)."""

from __future__ import annotations

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
