"""What the CLI prints about a task, from the task as the API returns it."""

from __future__ import annotations

from api.cli.render import stopping_line


def test_a_cancel_names_the_specs_stop_signal_and_grace() -> None:
    task = {"id": 7, "spec": {"command": "python train.py", "stop_signal": "INT", "grace_seconds": 30}}

    assert stopping_line(task) == "task 7 is stopping (SIGINT, then SIGKILL after 30 s)"


def test_a_cancel_without_stop_settings_says_sigterm_and_the_grace_period() -> None:
    task = {"id": 8, "spec": {"command": "python train.py"}}

    assert stopping_line(task) == "task 8 is stopping (SIGTERM, then SIGKILL after the grace period)"
