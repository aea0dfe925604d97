"""`nightshift submit --after-any ID`: a task that starts once ID ended, however it ended (`depends_on_any`);
`show` and `explain` say it, `--like` keeps it, `estimate --after-any` waits for it."""

from __future__ import annotations

from tests.cli.conftest import cli_as


def _new_id(output: str) -> int:
    return int(output.split("submitted task ")[1].split(" ")[0])


def test_after_any_is_repeatable_shown_explained_and_kept_by_like(
    cluster, a100_node, make_identity, monkeypatch, tmp_path
):
    who, token = make_identity("alice", "vision")
    first, _ = cluster.submit(who, {"command": "sleep 1", "not_before": "2030-01-07T12:00:00+00:00"})
    second, _ = cluster.submit(who, {"command": "true", "not_before": "2030-01-07T12:00:00+00:00"})
    monkeypatch.chdir(tmp_path)
    with cli_as(cluster, token, monkeypatch, tmp_path / "client-home") as nightshift:
        submitted = nightshift(
            "submit", "--after-any", str(first.id), "--after-any", str(second.id), "--depends-on",
            str(second.id), "--", "python", "eval.py",
        )  # fmt: skip
        child = _new_id(submitted.output)
        shown = nightshift("show", str(child))
        explained = nightshift("explain", str(child))
        again = nightshift("submit", "--like", str(child))
        estimate = nightshift("estimate", "--after-any", str(first.id), "--json")

    assert submitted.exit_code == 0, submitted.output
    task = cluster.tasks.get_any(child)
    assert (task.spec["depends_on_any"], task.spec["depends_on"]) == ([first.id, second.id], [second.id])
    assert "depends_on_any" in shown.output and f"[{first.id}, {second.id}]" in shown.output
    assert f"waiting for task {second.id} to succeed" in explained.output  # depends_on is looked at first
    assert again.exit_code == 0, again.output
    assert cluster.tasks.get_any(_new_id(again.output)).spec["depends_on_any"] == [first.id, second.id]
    assert estimate.exit_code == 0 and f"waiting for task {first.id} to end" in estimate.output


def test_explain_says_which_parent_it_waits_to_end(cluster, a100_node, make_identity, monkeypatch, tmp_path):
    who, token = make_identity("alice", "vision")
    parent, _ = cluster.submit(who, {"command": "true", "not_before": "2030-01-07T12:00:00+00:00"})
    child, _ = cluster.submit(who, {"command": "true", "depends_on_any": [parent.id]})
    with cli_as(cluster, token, monkeypatch, tmp_path / "client-home") as nightshift:
        explained = nightshift("explain", str(child.id))

    assert explained.exit_code == 0, explained.output
    assert f"waiting for task {parent.id} to end" in explained.output
