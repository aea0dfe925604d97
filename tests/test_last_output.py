"""`scheduler.logs.last_output`: the last lines a failed task's last attempt printed, for `explain`."""

from __future__ import annotations

from pathlib import Path

from scheduler.logs import LAST_OUTPUT_CHARS, last_output

TWO_ATTEMPTS = """\
==> nightshift task 8 attempt 1 on GPUs 0 at 2026-12-02T16:10:38+00:00
==> $ python train.py
loading data
RuntimeError: CUDA out of memory
==> nightshift task 8 attempt 1 ended: exit code 1 after 2.0 s at 2026-12-02T16:10:40+00:00
==> nightshift task 8 attempt 2 on GPUs 1 at 2026-12-02T16:11:08+00:00
==> $ python train.py

epoch 1
Traceback (most recent call last):
  File "train.py", line 3, in <module>
ValueError: loss is nan
==> nightshift task 8 attempt 2 ended: exit code 1 after 2.0 s at 2026-12-02T16:11:10+00:00
"""


def test_only_the_last_attempts_own_lines_are_kept_without_nightshifts_markers(tmp_path: Path) -> None:
    log = tmp_path / "8.log"
    log.write_text(TWO_ATTEMPTS)

    assert last_output(log) == [
        "epoch 1",
        "Traceback (most recent call last):",
        '  File "train.py", line 3, in <module>',
        "ValueError: loss is nan",
    ]
    assert last_output(log, 1) == ["ValueError: loss is nan"]


def test_why_nightshift_stopped_a_job_is_kept_and_a_long_line_is_cut(tmp_path: Path) -> None:
    log = tmp_path / "9.log"
    log.write_text(
        "==> nightshift task 9 attempt 1 on GPUs 0 at 2026-12-02T16:10:39+00:00\n==> $ sleep 30\n"
        + "x" * 1000
        + "\n==> nightshift stops the job (timeout): SIGTERM, SIGKILL after 10 s\n"
    )

    cut, stopped = last_output(log)

    assert len(cut) == LAST_OUTPUT_CHARS and cut.endswith("…")
    assert stopped == "==> nightshift stops the job (timeout): SIGTERM, SIGKILL after 10 s"


def test_a_task_without_output_has_no_last_lines(tmp_path: Path) -> None:
    assert last_output(tmp_path / "missing.log") == []
