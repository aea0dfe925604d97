"""What a teammate wrote (a command, tags, a job's output or metrics) reaches another person's terminal only as
text: no escape sequence (a window title, a cleared screen, the clipboard), no bidi override, no rich markup.

`nightshift ls`, `show`, `queue` and `compare` run against the real API, with a task a teammate submitted.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from api.cli.render import explain_panel, plain
from scheduler.service import Cluster
from scheduler.store.tables import Task
from tests.cli.conftest import cli_as

HOSTILE = "\x1b]0;PWNED\x07\x1b[2J\x1b]52;c;ZWNobyBoaQ==\x07\x9b31m\u202eevil"
MARKUP = "[bold red]loud[/] [link=http://evil.example]click[/link]"


def _assert_shown_as_text(output: str) -> None:
    for sequence in ("\x1b", "\x07", "\x9b", "\u202e"):
        assert sequence not in output, repr(output)


def test_plain_shows_control_characters_as_question_marks_and_markup_as_typed() -> None:
    assert plain("a\x1b[2Jb\tc\nd\u202ee") == "a?[2Jb\tc\nd?e"
    assert plain("[bold]x[/]") == "\\[bold]x\\[/]"


@pytest.mark.parametrize("command", [["ls"], ["show", "{id}"], ["queue"]])
def test_a_teammates_command_and_tags_reach_the_terminal_as_text(
    cluster: Cluster,
    make_identity: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Any,
    command: list[str],
) -> None:
    # Given a task whose command and tags carry escape sequences and markup, submitted by bob
    bob, _ = make_identity("bob", "vision")
    _, alice_token = make_identity("alice", "vision")
    spec = {
        "command": f"sleep 1 # {HOSTILE} {MARKUP}",
        "tags": [HOSTILE, MARKUP],
        "gpus": 0,
        "not_before": "2030-01-01T00:00:00Z",
    }
    task, _ = cluster.submit(bob, spec)

    # When his teammate alice looks at it
    with cli_as(cluster, alice_token, monkeypatch, tmp_path) as nightshift:
        result = nightshift(*[part.format(id=task.id) for part in command], "--json")
        assert result.exit_code == 0, result.output  # the JSON form keeps every character, escaped
        result = nightshift(*[part.format(id=task.id) for part in command])

    # Then what reaches her terminal is text
    assert result.exit_code == 0, result.output
    _assert_shown_as_text(result.output)
    if command[0] == "show":
        assert "[bold red]loud[/]" in result.output and "click[/link]" in result.output


def test_a_jobs_last_output_and_metrics_strings_reach_the_terminal_as_text(
    cluster: Cluster, make_identity: Callable[..., Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    from rich.console import Console

    console = Console(width=300, color_system=None, force_terminal=False, record=True)
    console.print(explain_panel({"task_id": 3, "status": "failed", "last_output": [HOSTILE, MARKUP]}))
    _assert_shown_as_text(console.export_text())

    bob, _ = make_identity("bob", "vision")
    _, alice_token = make_identity("alice", "vision")
    task, _ = cluster.submit(bob, {"command": "true", "gpus": 0, "tags": ["exp"]})
    with cluster.factory.begin() as session:  # as the worker stores a job's metrics.json
        row = session.get(Task, task.id)
        assert row is not None
        row.metrics = {"loss": 0.5, "note": HOSTILE + MARKUP}

    with cli_as(cluster, alice_token, monkeypatch, tmp_path) as nightshift:
        result = nightshift("compare", "exp")

    assert result.exit_code == 0, result.output
    _assert_shown_as_text(result.output)
    assert "loud" in result.output
