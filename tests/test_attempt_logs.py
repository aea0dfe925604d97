"""A log file cut at its attempt headers and joined again in attempt order (`scheduler.attempt_logs`)."""

from __future__ import annotations

from scheduler.attempt_logs import (
    AttemptRun,
    LogParts,
    join_parts,
    last_lines,
    lead_owner,
    missing_line,
    split_attempts,
    starts_attempt_from,
    with_lead,
)
from scheduler.logs import last_output_in


def _attempt(task_id: int, number: int, output: str) -> str:
    return (
        f"==> nightshift task {task_id} attempt {number} on GPUs 0 at 2026-01-01T00:00:00+00:00\n"
        f"==> $ train.py\n{output}"
        f"==> nightshift task {task_id} attempt {number} ended: exit code 3 after 1.0 s at 2026-01-01\n"
    )


def test_a_file_splits_at_its_attempt_headers_and_not_at_their_end_lines():
    text = _attempt(7, 1, "one\n") + _attempt(7, 3, "three\n")

    found = split_attempts(text, 7)

    assert (found.lead, found.first, sorted(found.parts)) == ("", 1, [1, 3])
    assert found.parts[1] == _attempt(7, 1, "one\n") and found.parts[3] == _attempt(7, 3, "three\n")
    assert split_attempts(text, 8) == LogParts(text, {}, None)  # another task's headers are not its


def test_text_before_the_first_header_goes_to_the_attempt_whose_header_was_cut_off():
    cut = "==> the first 10 bytes are left out: see the log on its node\ntail of one\n" + _attempt(
        7, 3, "x\n"
    )

    found = split_attempts(cut, 7)

    assert with_lead(found, [1, 3])[1].startswith("==> the first 10 bytes")
    assert lead_owner(3, [3]) == 3 and lead_owner(None, [1, 3]) == 3 and lead_owner(None, []) is None


def test_pieces_join_on_lines_of_their_own_and_a_tail_counts_across_them():
    joined = join_parts(["a\nb", "", "c\n"])

    assert joined == "a\nb\nc\n"
    assert (
        last_lines(joined, 2) == "b\nc\n"
        and last_lines(joined, 0) == ""
        and last_lines(joined, None) == joined
    )


def test_a_missing_part_is_never_taken_for_the_jobs_output():
    line = missing_line(AttemptRun(1, "box-a"), "its worker is not running")

    assert line == "==> the output of attempt 1, on node box-a, is missing here: its worker is not running\n"
    assert last_output_in(_attempt(7, 1, "boom\n") + line) == ["boom"]


def test_a_followed_file_is_known_to_hold_a_new_attempt_by_its_header():
    data = (_attempt(7, 1, "one\n") + _attempt(7, 2, "two\n")).encode()

    assert starts_attempt_from(data, 7, 2) and not starts_attempt_from(data, 7, 3)
