"""`nightshift submit --test-only` (Slurm's `sbatch --test-only`): the spec checked as its submission would
be, when it would start, and nothing submitted."""

from __future__ import annotations

import json

from tests.cli.conftest import cli_as


def test_submit_test_only_says_when_it_would_start_and_submits_nothing(
    cluster, a100_node, make_identity, monkeypatch, tmp_path
):
    _, alice = make_identity("alice", "vision")
    with cli_as(cluster, alice, monkeypatch, tmp_path / "alice") as nightshift:
        said = nightshift("submit", "--test-only", "--gpus", "2", "--", "python", "train.py")
        as_json = nightshift("submit", "--test-only", "--json", "--", "python", "train.py")
        sweep = nightshift(
            "submit", "--test-only", "--param", "lr=1,2,3", "--", "python", "t.py", "--lr", "{lr}"
        )
        refused = nightshift("submit", "--test-only", "--gpus", "9", "--", "python", "train.py")

    assert said.exit_code == 0, said.output
    assert "would submit train.py: expected start" in said.stdout and "starts now" in said.stdout
    assert "nothing was submitted (--test-only)" in said.stdout
    assert json.loads(as_json.stdout)["estimate"]["reason"] == "starts now"
    assert "would submit a sweep of 3 tasks: t.py lr:1, t.py lr:2, t.py lr:3" in sweep.stdout
    assert refused.exit_code == 1 and "the largest node has 4 GPUs" in refused.stderr
    assert cluster.tasks.with_status("queued") == []
