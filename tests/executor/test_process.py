"""Running real jobs: outcomes, logs, environment, and stopping them without leaving a process behind."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from pathlib import Path

from scheduler.executor import JobOutcome, RunningJob, find_processes_with_token
from tests.conftest import is_alive, read_pids

from .conftest import WAIT_S, wait_until

RunJob = Callable[..., RunningJob]
# Prints "ready" once its trap is set, then idles in short sleeps so the trap runs promptly.
IDLE = "echo ready; while true; do sleep 0.1; done"


def finish(job: RunningJob) -> JobOutcome:
    assert job.wait(WAIT_S) is not None, "the job did not finish in time"
    assert job.outcome is not None
    return job.outcome


def log_lines(job: RunningJob) -> list[str]:
    """The job's log without its two header lines (the second one repeats the command)."""
    return job.request.log_path.read_text().splitlines()[2:]


def wait_for_log(job: RunningJob, line: str) -> None:
    wait_until(lambda: line in log_lines(job), what=f"the line {line!r} in the log")


def test_a_job_that_exits_0_succeeds(run_job: RunJob) -> None:
    outcome = finish(run_job("exit 0"))

    assert outcome == JobOutcome(exit_code=0, signal=None, reason="exit")
    assert outcome.succeeded


def test_a_job_that_exits_3_fails_with_its_exit_code(run_job: RunJob) -> None:
    outcome = finish(run_job("exit 3"))

    assert outcome == JobOutcome(exit_code=3, signal=None, reason="nonzero_exit")
    assert not outcome.succeeded


def test_a_command_not_found_or_not_executable_says_so_beside_its_exit_code(
    run_job: RunJob, tmp_path: Path
) -> None:
    script = tmp_path / "train.sh"
    script.write_text("echo hi\n")  # no execute bit
    missing = finish(run_job("no-such-command-nightshift-test --epochs 3"))
    denied = finish(run_job(str(script)))

    assert (missing.reason, missing.exit_code) == ("nonzero_exit", 127)  # the reason stays as it was
    assert missing.describe() == "exit code 127 (command not found)"
    assert (denied.reason, denied.exit_code) == ("nonzero_exit", 126)
    assert denied.describe() == "exit code 126 (not executable)"


def test_a_running_job_has_no_outcome_yet(run_job: RunJob) -> None:
    job = run_job("sleep 300")

    assert job.poll() is None
    assert job.outcome is None


def test_stdout_and_stderr_land_in_the_log_between_a_header_and_a_footer(run_job: RunJob) -> None:
    job = run_job("echo to-stdout; echo to-stderr >&2; exit 4")
    finish(job)

    lines = job.request.log_path.read_text().splitlines()

    assert lines[0].startswith("==> nightshift task 12 attempt 1 on GPUs 0,1 at ")
    assert lines[1] == "==> $ echo to-stdout; echo to-stderr >&2; exit 4"
    assert lines[2:4] == ["to-stdout", "to-stderr"]
    assert lines[4].startswith("==> nightshift task 12 attempt 1 ended: exit code 4 after ")


def test_output_without_a_final_newline_keeps_its_last_line_apart_from_the_footer(run_job: RunJob) -> None:
    job = run_job("printf no-newline-at-end")
    finish(job)

    lines = job.request.log_path.read_text().splitlines()

    assert lines[2] == "no-newline-at-end"
    assert lines[3].startswith("==> nightshift task 12 attempt 1 ended: exit code 0 after ")


def test_a_second_attempt_appends_to_the_same_log(run_job: RunJob) -> None:
    first = run_job("echo first")
    finish(first)
    second = run_job("echo second", attempt=2, log_path=first.request.log_path)
    finish(second)

    text = first.request.log_path.read_text()

    assert text.index("first") < text.index("attempt 2 on GPUs") < text.index("second")


def test_the_job_runs_in_its_workdir_in_its_own_session_and_process_group(run_job: RunJob) -> None:
    job = run_job("pwd; sleep 300")
    wait_for_log(job, str(job.request.workdir))  # pwd has run

    assert os.getsid(job.pid) == job.pid
    assert os.getpgid(job.pid) == job.pid


def test_the_job_sees_its_gpus_and_ids_but_not_the_workers_secrets(run_job: RunJob) -> None:
    worker_env = {
        "PATH": os.environ["PATH"],
        "NIGHTSHIFT_DATABASE_URL": "postgresql://nightshift:hunter2@db/nightshift",
        "OPENAI_API_KEY": "sk-secret",
        "GITHUB_TOKEN": "ghp_secret",
    }
    job = run_job("env > job.env", base_env=worker_env, gpu_indices=(1, 3), env={"WANDB_MODE": "offline"})
    finish(job)

    env = dict(line.split("=", 1) for line in (job.request.workdir / "job.env").read_text().splitlines())

    assert env["CUDA_VISIBLE_DEVICES"] == "1,3"
    assert env["NIGHTSHIFT_TASK_ID"] == "12"
    assert env["NIGHTSHIFT_ATTEMPT"] == "1"
    assert env["WANDB_MODE"] == "offline"
    assert not {"NIGHTSHIFT_DATABASE_URL", "OPENAI_API_KEY", "GITHUB_TOKEN"} & env.keys()
    assert "hunter2" not in (job.request.workdir / "job.env").read_text()


def test_stopping_a_job_kills_its_background_children(run_job: RunJob) -> None:
    job = run_job("sleep 300 & echo $! >> pids; sleep 300 & echo $! >> pids; wait")
    children = read_pids(job.request.workdir / "pids", 2)

    job.stop(0.5, "cancelled")

    assert not [pid for pid in [job.pid, *children] if is_alive(pid)]
    assert find_processes_with_token(job.run_token) == []
    assert job.outcome == JobOutcome(exit_code=None, signal=signal.SIGTERM, reason="cancelled")


def test_stopping_a_job_kills_a_grandchild_that_escaped_its_process_group(run_job: RunJob) -> None:
    job = run_job("setsid sleep 300 & echo $! > pids; wait")
    (escaped,) = read_pids(job.request.workdir / "pids", 1)
    wait_until(lambda: os.getsid(escaped) != job.pid, what="the grandchild to leave the job's session")

    job.stop(0.5, "cancelled")

    assert not is_alive(escaped)
    assert find_processes_with_token(job.run_token) == []


def test_an_escaped_grandchild_that_ignores_sigterm_is_killed_after_the_grace_period(run_job: RunJob) -> None:
    job = run_job("(trap '' TERM; exec setsid sleep 300) & echo $! > pids; wait")
    (escaped,) = read_pids(job.request.workdir / "pids", 1)
    wait_until(lambda: os.getsid(escaped) != job.pid, what="the grandchild to leave the job's session")

    job.stop(0.3, "timeout")

    assert not is_alive(escaped)
    assert job.outcome is not None and job.outcome.reason == "timeout"


def test_a_job_that_traps_sigterm_saves_and_exits_cleanly_within_the_grace_period(run_job: RunJob) -> None:
    job = run_job(f"trap 'echo saved; exit 0' TERM; {IDLE}")
    wait_for_log(job, "ready")

    job.stop(5.0, "cancelled")

    assert "saved" in log_lines(job)
    assert not [line for line in log_lines(job) if line.startswith("==> still running after")]
    assert job.outcome == JobOutcome(exit_code=0, signal=None, reason="cancelled")


def test_a_job_starts_with_default_signals_whatever_the_worker_ignores_or_blocks(run_job: RunJob) -> None:
    # Given a worker started in the background by a script (`worker &` ignores SIGINT and SIGQUIT), with
    # SIGUSR1 blocked in the thread that launches jobs
    ignored = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGQUIT)}
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
    try:
        job = run_job(
            "trap 'echo saved-on-int; exit 0' INT; "
            # the shell reads its own masks with builtins: a forked reader could catch it inside a fork,
            # when dash blocks every signal for a moment
            'while read -r line; do case $line in SigIgn:*|SigBlk:*) echo "$line";; esac; done < /proc/$$/status; '
            f"{IDLE}"
        )
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        for sig, handler in ignored.items():
            signal.signal(sig, handler)
    wait_for_log(job, "ready")

    # Then its job ignores and blocks nothing, so a spec's `stop_signal: INT` reaches the job's trap
    masks = dict(line.split(":\t") for line in log_lines(job) if line.startswith("Sig"))
    standard = (1 << 31) - 1  # signals 1-31 (glibc reserves 32 and 33; nothing can reset those)
    assert int(masks["SigIgn"], 16) & standard == 0 and int(masks["SigBlk"], 16) & standard == 0, masks
    job.stop(5.0, "cancelled", sig=signal.SIGINT)
    assert "saved-on-int" in log_lines(job)
    assert job.outcome == JobOutcome(exit_code=0, signal=None, reason="cancelled")


def test_a_job_ignoring_sigterm_is_killed_after_the_grace_period(run_job: RunJob) -> None:
    job = run_job(f"trap '' TERM; {IDLE}")
    wait_for_log(job, "ready")

    job.stop(0.3, "timeout")

    assert job.outcome == JobOutcome(
        exit_code=None, signal=signal.SIGKILL, reason="timeout", outlived_grace_s=0.3
    )
    assert job.outcome.describe() == "stopped at its time limit (killed by SIGKILL after its 0.3-s grace)"
    assert "==> still running after 0.3 s: SIGKILL" in log_lines(job)
    assert not is_alive(job.pid)


def test_a_job_whose_leader_dies_of_sigterm_but_a_child_ignores_it_ended_by_sigkill(run_job: RunJob) -> None:
    job = run_job(f"(trap '' TERM; {IDLE}) & wait")  # the shell dies of SIGTERM; its subshell does not
    wait_for_log(job, "ready")

    job.stop(0.3, "cancelled")

    assert job.outcome is not None and job.outcome.signal == signal.SIGKILL
    assert job.outcome.describe() == "cancelled (killed by SIGKILL after its 0.3-s grace)"  # not "by SIGTERM"
    assert "cancelled (killed by SIGKILL after its 0.3-s grace) after " in log_lines(job)[-1]


def test_a_lost_lease_can_kill_at_once_with_sigkill(run_job: RunJob) -> None:
    job = run_job(f"trap '' TERM; {IDLE}")

    job.stop(0.0, "lost_lease", sig=signal.SIGKILL)

    assert job.outcome == JobOutcome(exit_code=None, signal=signal.SIGKILL, reason="lost_lease")


def test_stopping_twice_keeps_the_first_reason(run_job: RunJob) -> None:
    job = run_job("sleep 300")

    job.stop(0.5, "timeout")
    job.stop(0.5, "cancelled")

    assert job.outcome is not None and job.outcome.reason == "timeout"


def test_a_stop_from_another_thread_finishes_while_the_worker_loop_polls(run_job: RunJob) -> None:
    job = run_job(f"trap '' TERM; {IDLE}")
    wait_for_log(job, "ready")
    stopper = threading.Thread(target=job.stop, args=(0.3, "cancelled"))
    stopper.start()
    concurrent = threading.Thread(target=job.stop, args=(0.3, "lost_lease"))
    concurrent.start()

    returncode = job.wait(WAIT_S)
    stopper.join(WAIT_S)
    concurrent.join(WAIT_S)

    assert returncode == -signal.SIGKILL
    assert job.outcome is not None and job.outcome.reason in {"cancelled", "lost_lease"}


def test_stopping_a_job_that_already_ended_keeps_its_outcome(run_job: RunJob) -> None:
    job = run_job("exit 0")
    finish(job)

    job.stop(0.5, "cancelled")

    assert job.outcome == JobOutcome(exit_code=0, signal=None, reason="exit")


def test_a_job_that_ends_leaves_no_background_child_running(run_job: RunJob) -> None:
    job = run_job("sleep 300 & echo $! > pids; setsid sleep 300 & echo $! >> pids; exit 0")
    children = read_pids(job.request.workdir / "pids", 2)

    assert finish(job).reason == "exit"
    assert not [pid for pid in children if is_alive(pid)]
    assert find_processes_with_token(job.run_token) == []


def test_a_job_killed_by_a_signal_nightshift_did_not_send_reads_as_signal(run_job: RunJob) -> None:
    outcome = finish(run_job("kill -KILL $$"))

    assert outcome == JobOutcome(exit_code=None, signal=signal.SIGKILL, reason="signal")


def test_a_job_that_fails_with_cuda_out_of_memory_in_its_log_reads_as_oom(run_job: RunJob) -> None:
    outcome = finish(
        run_job("echo 'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2 GiB' >&2; exit 1")
    )

    assert outcome == JobOutcome(exit_code=1, signal=None, reason="oom")


def test_a_job_sigkilled_after_reporting_out_of_memory_reads_as_oom(run_job: RunJob) -> None:
    outcome = finish(run_job("echo 'out of memory: Killed process 4242 (python)'; kill -KILL $$"))

    assert outcome == JobOutcome(exit_code=None, signal=signal.SIGKILL, reason="oom")


def test_exit_137_without_an_out_of_memory_message_is_a_plain_nonzero_exit(run_job: RunJob) -> None:
    assert finish(run_job("exit 137")).reason == "nonzero_exit"


def test_an_out_of_memory_mention_in_the_command_line_alone_is_not_oom(run_job: RunJob) -> None:
    assert finish(run_job("exit 1 # retry on CUDA out of memory")).reason == "nonzero_exit"


def test_the_time_limit_is_exceeded_once_the_job_has_run_that_long(run_job: RunJob) -> None:
    job = run_job("sleep 300", time_limit_s=60.0)

    assert not job.time_limit_exceeded(job.started_at + 59.9)
    assert job.time_limit_exceeded(job.started_at + 60.0)


def test_a_job_without_a_time_limit_never_exceeds_it(run_job: RunJob) -> None:
    job = run_job("sleep 300")

    assert not job.time_limit_exceeded(job.started_at + 10 * 365 * 86400)


def test_the_output_limit_counts_only_this_attempts_output(run_job: RunJob, tmp_path: Path) -> None:
    earlier = tmp_path / "earlier.log"
    earlier.write_bytes(b"x" * 5000)  # an earlier attempt's output in the same log file
    quiet = run_job("head -c 500 /dev/zero; sleep 300", log_path=earlier, max_log_bytes=2000)
    loud = run_job("head -c 3000 /dev/zero; sleep 300", log_path=tmp_path / "loud.log", max_log_bytes=2000)
    unlimited = run_job("head -c 3000 /dev/zero; sleep 300", log_path=tmp_path / "free.log")

    wait_until(loud.output_limit_exceeded)
    wait_until(lambda: unlimited.request.log_path.stat().st_size > 3000)
    wait_until(lambda: earlier.stat().st_size >= 5500)

    assert not quiet.output_limit_exceeded()  # 500 bytes of its own, whatever the file held before
    assert not unlimited.output_limit_exceeded()


def test_a_missing_log_folder_is_created(run_job: RunJob, tmp_path: Path) -> None:
    job = run_job("echo hi", log_path=tmp_path / "deep" / "er" / "job.log")
    finish(job)

    assert "hi" in job.request.log_path.read_text()


def test_how_a_job_ended_reads_as_words_for_its_task() -> None:
    described = {
        JobOutcome(0, None, "exit").describe(),
        JobOutcome(3, None, "nonzero_exit").describe(),
        JobOutcome(None, signal.SIGTERM, "timeout").describe(),
        JobOutcome(0, None, "cancelled").describe(),
        JobOutcome(1, None, "oom").describe(),
        JobOutcome(None, signal.SIGSEGV, "signal").describe(),
        JobOutcome(None, signal.SIGKILL, "lost_lease").describe(),
    }

    assert described == {
        "exit code 0",
        "exit code 3",
        "stopped at its time limit (killed by SIGTERM)",
        "cancelled (exit code 0)",
        "out of memory (exit code 1)",
        "killed by SIGSEGV (not sent by nightshift)",
        "stopped: its worker lost the task's lease (killed by SIGKILL)",
    }
