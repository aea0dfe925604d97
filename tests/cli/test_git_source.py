"""`nightshift submit` records the git commit of the task's workdir (`git` in the spec: commit, branch,
changes not committed), so a result can be traced to its code; `--no-git` skips it, a run again records
the workdir as it is then."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from api.cli.provenance import git_source, git_words, with_git_source
from scheduler.resubmit import spec_again
from scheduler.spec import parse_spec
from tests.cli.conftest import cli_as


def _git(folder: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(folder), "-c", "user.email=a@b", "-c", "user.name=a", *args],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return done.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    folder = tmp_path / "repo"
    folder.mkdir()
    _git(folder, "init", "-q", "-b", "main")
    (folder / "train.py").write_text("print(1)\n")
    _git(folder, "add", "train.py")
    _git(folder, "commit", "-q", "-m", "first")
    return folder


def test_the_commit_branch_and_uncommitted_changes_are_read(repo: Path, tmp_path: Path):
    head = _git(repo, "rev-parse", "HEAD")

    assert git_source(str(repo)) == {"commit": head, "branch": "main", "dirty": False}
    (repo / "train.py").write_text("print(2)\n")
    assert git_source(str(repo / ".")) == {"commit": head, "branch": "main", "dirty": True}
    (repo / "notes.txt").write_text("untracked files do not make it dirty\n")
    _git(repo, "checkout", "-q", "train.py")
    _git(repo, "checkout", "-q", "--detach")
    assert git_source(str(repo)) == {"commit": head, "branch": None, "dirty": False}
    outside = tmp_path / "plain"
    outside.mkdir()
    assert git_source(str(outside)) is None


def test_no_git_or_a_silent_git_records_nothing_and_a_specs_own_git_wins(repo: Path):
    def missing(*args, **kwargs):
        raise FileNotFoundError("git")

    def hanging(*args, **kwargs):
        raise subprocess.TimeoutExpired("git", 5)

    spec = {"command": "python train.py", "workdir": str(repo)}
    assert git_source(str(repo), missing) is None and git_source(str(repo), hanging) is None
    assert with_git_source(spec, record=False) == spec
    own = {**spec, "git": {"commit": "abc1234"}}
    assert with_git_source(own, record=True) == own
    assert parse_spec(with_git_source(spec, record=True)).git is not None  # a valid spec field


def test_a_run_again_leaves_the_old_commit_out_and_it_reads_for_people():
    stored = {"command": "python train.py", "git": {"commit": "a" * 40, "branch": "main", "dirty": True}}

    assert "git" not in spec_again(stored, datetime(2026, 12, 7, tzinfo=UTC)).spec
    assert git_words(stored["git"]) == "aaaaaaa on main, with changes not committed"
    assert git_words({"commit": "b" * 40, "branch": None, "dirty": False}) == "bbbbbbb"


def test_submit_records_the_commit_and_no_git_does_not(
    repo: Path, cluster, a100_node, make_identity, monkeypatch, tmp_path
):
    _, alice = make_identity("alice", "vision")
    head = _git(repo, "rev-parse", "HEAD")
    with cli_as(cluster, alice, monkeypatch, tmp_path / "alice") as nightshift:
        recorded = nightshift("submit", "--json", "--workdir", str(repo), "--", "python", "train.py")
        skipped = nightshift(
            "submit", "--json", "--no-git", "--workdir", str(repo), "--", "python", "train.py"
        )
        shown = nightshift("show", str(json.loads(recorded.stdout)["id"]))

    assert recorded.exit_code == 0, recorded.output
    assert json.loads(recorded.stdout)["spec"]["git"] == {"commit": head, "branch": "main", "dirty": False}
    assert json.loads(skipped.stdout)["spec"].get("git") is None
    assert f"{head[:7]} on main" in shown.stdout
    with pytest.raises(Exception, match="commit"):
        parse_spec({"command": "x", "git": {"commit": "not hex"}})


def test_a_retried_submission_from_an_edited_workdir_is_the_same_submission():
    from scheduler.service import same_submission

    first = {"command": "python train.py", "git": {"commit": "a" * 40, "dirty": False}}
    assert same_submission(first, {**first, "git": {"commit": "a" * 40, "dirty": True}})
    assert not same_submission(first, {**first, "command": "python eval.py"})


def test_compare_shows_which_code_made_each_row_when_the_rows_code_differs(
    repo: Path, cluster, a100_node, make_identity, monkeypatch, tmp_path
):
    from scheduler.store.sweeps import SweepStore

    def finish(task_id: int, loss: float) -> None:
        token = f"t-{task_id}"
        cluster.queue.remove(task_id)
        assert cluster.tasks.mark_running(task_id, token, "box-1", [0]) is not None
        assert SweepStore(cluster.factory).record_metrics(task_id, token, {"loss": loss}, None)
        assert cluster.settle_attempt(task_id, token, "exit", exit_code=0) == "succeeded"

    _, alice = make_identity("alice", "vision")
    first = _git(repo, "rev-parse", "HEAD")
    with cli_as(cluster, alice, monkeypatch, tmp_path / "alice") as nightshift:
        submit = ("submit", "--json", "--tag", "exp", "--workdir", str(repo), "--", "python", "train.py")
        old = json.loads(nightshift(*submit).stdout)["id"]
        (repo / "train.py").write_text("print(3)\n")
        _git(repo, "commit", "-q", "-am", "second")
        (repo / "train.py").write_text("print(4)\n")  # and edited since
        new = json.loads(nightshift(*submit).stdout)["id"]
        finish(old, 0.5)
        finish(new, 0.4)
        across = nightshift("compare", "exp")
        one = nightshift("compare", "exp", "--json")

    second = _git(repo, "rev-parse", "HEAD")
    assert across.exit_code == 0, across.output
    assert "code" in across.stdout and first[:7] in across.stdout and f"{second[:7]}+" in across.stdout
    assert {row["task_id"]: row["code"] for row in json.loads(one.stdout)["rows"]} == {
        old: first[:7],
        new: f"{second[:7]}+",
    }
