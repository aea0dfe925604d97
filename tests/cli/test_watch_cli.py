"""`queue`, `gpus` and `ls` with `--watch SECONDS`: redrawn in place until Ctrl-C, which ends quietly; an
API that does not answer shows as a line and is asked again; not with `--json`."""

from __future__ import annotations

import pytest
from rich.console import Console

from api.cli import watching
from api.cli.watching import watch, watched
from api.client import ClientError
from tests.cli.conftest import cli_as


def _text(renderable) -> str:
    console = Console(width=120, record=True)
    console.print(renderable)
    return console.export_text()


def test_the_table_is_drawn_again_after_each_pause_until_ctrl_c():
    drawn: list[int] = []
    pauses: list[float] = []

    def pause(seconds: float) -> None:
        pauses.append(seconds)
        if len(pauses) == 3:
            raise KeyboardInterrupt

    watch(lambda: drawn.append(len(drawn)) or f"draw {len(drawn)}", 2.0, pause)

    assert drawn == [0, 1, 2] and pauses == [2.0, 2.0, 2.0]  # first draw, then one after each pause


def test_an_api_that_does_not_answer_is_a_line_not_the_end():
    def down() -> str:
        raise ClientError(0, "cannot reach the nightshift API at http://127.0.0.1:1")

    text = _text(watched(down, 2.0))

    assert "error: cannot reach the nightshift API" in text and "every 2 s; Ctrl-C stops" in text


@pytest.mark.parametrize("command", ["queue", "gpus", "ls"])
def test_watching_redraws_each_view_and_json_is_refused(
    command, cluster, a100_node, make_identity, monkeypatch, tmp_path
):
    _, alice = make_identity("alice", "vision")

    def once(seconds: float) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(watching, "pause_between_draws", once)
    with cli_as(cluster, alice, monkeypatch, tmp_path / "alice") as nightshift:
        nightshift("submit", "--gpus", "1", "--", "python", "train.py")
        watched_view = nightshift(command, "--watch", "0.5")
        both = nightshift(command, "--watch", "1", "--json")

    assert watched_view.exit_code == 0, watched_view.output
    assert "every 0.5 s; Ctrl-C stops" in watched_view.stdout
    assert ("box-1" if command == "gpus" else "train.py") in watched_view.stdout
    assert both.exit_code == 2 and "--json is for scripts" in both.stderr
