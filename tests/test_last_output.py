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


def test_every_line_nightshift_writes_is_left_out_and_a_long_line_is_cut(tmp_path: Path) -> None:
    log = tmp_path / "9.log"
    log.write_text(
        "==> nightshift task 9 attempt 1 on GPUs 0 at 2026-12-02T16:10:39+00:00\n==> $ sleep 30\n"
        + "x" * 1000
        + "\nstill training\n"
        + "==> nightshift stops the job (timeout): SIGTERM, SIGKILL after 10 s\n"
        + "==> still running after 10 s: SIGKILL\n"
        + "==> nightshift task 9 attempt 1 ended: timeout after 30.0 s at 2026-12-02T16:11:09+00:00\n"
    )

    cut, last = last_output(log)

    assert len(cut) == LAST_OUTPUT_CHARS and cut.endswith("…")
    assert last == "still training"  # not nightshift's own stop lines


def test_a_job_that_could_not_start_has_no_output_of_its_own(tmp_path: Path) -> None:
    log = tmp_path / "10.log"
    log.write_text(
        "==> nightshift task 10 attempt 1 on GPUs 0 at 2026-12-02T16:10:39+00:00\n==> $ ./missing\n"
        "==> nightshift could not start the job: [Errno 2] No such file or directory\n"
        "==> nightshift task 10 attempt 1 ended: exit code 127 after 0.0 s at 2026-12-02T16:10:39+00:00\n"
    )

    assert last_output(log) == []


def test_a_task_without_output_has_no_last_lines(tmp_path: Path) -> None:
    assert last_output(tmp_path / "missing.log") == []
