"""The job's shell records its own end in its output (`executor.exit_record`): the exit code it ended with,
for its attempt only, and nothing when a signal ended it or it `exec`ed another program."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from scheduler.executor.exit_record import recorded_exit, run_tag, take_exit_record, with_exit_record
from scheduler.logs import EXIT_RECORD_TAKEN_WITHIN_S, read_from, read_tail
from tests.conftest import wait_until

TOKEN = "node-a.0123456789:task7:abc123"


def _run(command: str, log: Path, token: str = TOKEN) -> subprocess.Popen[bytes]:
    with open(log, "ab") as out:
        return subprocess.Popen(["/bin/sh", "-c", with_exit_record(command, token)], stdout=out, stderr=out)


@pytest.mark.parametrize(
    "command, code", [("true", 0), ("exit 3", 3), ("set -e; false; echo never", 1), ("sh -c 'exit 42'", 42)]
)
def test_the_shell_records_the_code_it_exits_with(tmp_path: Path, command: str, code: int) -> None:
    log = tmp_path / "job.log"

    assert _run(command, log).wait(10) == code  # the exit code is the command's, trap or not

    assert recorded_exit(log, TOKEN, 7, 1) == (code, False)
    assert (
        recorded_exit(log, TOKEN.replace("abc123", "abc124"), 7, None) is None
    )  # another attempt's is not this one


def test_a_shell_killed_by_a_signal_or_replaced_by_exec_records_nothing(tmp_path: Path) -> None:
    killed, replaced = tmp_path / "killed.log", tmp_path / "exec.log"
    job = _run("echo started; sleep 30", killed)
    wait_until(lambda: "started" in killed.read_text())
    job.send_signal(signal.SIGKILL)
    assert job.wait(10) == -signal.SIGKILL

    assert _run("exec true", replaced).wait(10) == 0

    assert recorded_exit(killed, TOKEN, 7, 1) is None
    assert recorded_exit(replaced, TOKEN, 7, 1) is None


def test_the_worker_s_end_line_takes_the_exit_line_s_place_and_still_reads_as_the_end(tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    assert _run("printf 'epoch 3/3'", log).wait(10) == 0  # no final newline: the exit line follows on it
    assert recorded_exit(log, TOKEN, 7, 1) == (0, False)

    # When the worker sees the end: the exit line goes, and its own end line comes in its place
    take_exit_record(log, TOKEN)
    assert log.read_text() == "epoch 3/3"
    assert recorded_exit(log, TOKEN, 7, 1) is None  # nothing recorded yet
    log.write_text("epoch 3/3\n==> nightshift task 7 attempt 1 ended: exit code 0 after 1.0 s at now\n")

    # Then the end reads from that line, for that attempt only
    assert recorded_exit(log, TOKEN, 7, 1) == (0, True)
    assert recorded_exit(log, TOKEN, 7, 2) is None
    assert recorded_exit(log, TOKEN, 8, 1) is None


@pytest.mark.parametrize(
    "end_line, code",
    [
        ("out of memory (exit code 1) after 3.0 s", 1),
        ("exit code 127 (command not found) after 0.1 s", 127),
        ("cancelled (exit code 0) after 2.0 s", None),  # a stop: retried as a lost attempt, not ended
        ("stopped at its time limit (killed by SIGTERM) after 60.0 s", None),
    ],
)
def test_only_an_end_line_of_a_job_that_ended_on_its_own_gives_its_code(
    tmp_path: Path, end_line: str, code: int | None
) -> None:
    log = tmp_path / "job.log"
    log.write_text(f"output\n==> nightshift task 7 attempt 1 ended: {end_line} at now\n")

    recorded = recorded_exit(log, TOKEN, 7, 1)
    assert (recorded.code if recorded is not None else None) == code


def test_an_exit_line_not_at_the_end_of_the_log_stays(tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    assert _run("(sleep 0.3; echo late) &", log).wait(10) == 0
    wait_until(lambda: "late" in log.read_text())

    take_exit_record(log, TOKEN)

    assert log.read_text().splitlines()[-1] == "late"
    assert recorded_exit(log, TOKEN, 7, 1) == (0, False)


def test_a_follower_stops_before_a_fresh_exit_line_and_reads_the_end_line_written_in_its_place(
    tmp_path: Path,
) -> None:
    """`logs -f` read the exit line, the worker then cut it and wrote its longer end line there, and the
    follower's next read began inside that end line (CI: the stream ended with ` at 2026-...` alone)."""
    log = tmp_path / "job.log"
    assert _run("echo 'epoch 3/3'", log).wait(10) == 0
    text, cursor = read_tail(log, None)
    data, offset = read_from(log, 0)

    # Then a reader stops before the shell's exit line while its worker may still take it back
    assert text == "epoch 3/3\n" and data == b"epoch 3/3\n" and cursor == offset == len(b"epoch 3/3\n")

    # When the worker replaces it by its own end line, the follower reads that whole line from its cursor
    take_exit_record(log, TOKEN)
    end_line = "==> nightshift task 7 attempt 1 ended: exit code 0 after 0.1 s at 2026-12-04T14:44:50+00:00\n"
    with open(log, "a") as out:
        out.write(end_line)
    assert read_from(log, offset) == (end_line.encode(), offset + len(end_line))


def test_an_exit_line_no_worker_took_back_is_read_once_it_is_old(tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    assert _run("echo done", log).wait(10) == 0
    assert read_from(log, 0)[0] == b"done\n"

    # When its worker is gone and the line stays past the time a worker takes to replace it
    old = time.time() - EXIT_RECORD_TAKEN_WITHIN_S - 1
    os.utime(log, (old, old))

    # Then it is the log's end, read like any line
    data, _ = read_from(log, 0)
    assert data.decode().splitlines() == [
        "done",
        f"==> the job's shell exited with code 0 (run {run_tag(TOKEN)})",
    ]
    assert read_tail(log, 1)[0].startswith("==> the job's shell exited with code 0")
