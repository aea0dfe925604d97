"""The trace reader: clear errors for bad CSVs."""

from __future__ import annotations

from pathlib import Path

import pytest

from scheduler.policy.types import PriorityClass
from scheduler.simulate import TraceError, parse_gpus_spec, read_trace


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "t.csv"
    p.write_text(text)
    return p


def test_a_good_trace_is_read_and_sorted_by_submit_time(tmp_path: Path) -> None:
    p = write(
        tmp_path,
        "job_id,submit_time_s,duration_s,num_gpus,team,priority,offpeak\nb,5,10,2,x,high,yes\na,1,3,1,,,\n",
    )
    jobs = read_trace(p)
    assert [j.job_id for j in jobs] == ["a", "b"]
    assert jobs[0].team == "default" and jobs[0].user == "default"
    assert jobs[1].priority == PriorityClass.HIGH and jobs[1].offpeak and jobs[1].gpus == 2


def test_a_missing_required_column_is_named(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="missing required column num_gpus"):
        read_trace(write(tmp_path, "submit_time_s,duration_s\n1,2\n"))


def test_a_non_numeric_value_names_its_line_and_column(tmp_path: Path) -> None:
    p = write(tmp_path, "submit_time_s,duration_s,num_gpus\n1,2,1\n3,soon,1\n")
    with pytest.raises(
        TraceError, match=r"line 3: column 'duration_s' must be a number of seconds, got 'soon'"
    ):
        read_trace(p)


def test_fractional_gpu_counts_and_bad_flags_are_refused(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="line 2: column 'num_gpus' must be a whole number"):
        read_trace(write(tmp_path, "submit_time_s,duration_s,num_gpus\n1,2,1.5\n"))
    with pytest.raises(TraceError, match="column 'offpeak' must be true or false"):
        read_trace(write(tmp_path, "submit_time_s,duration_s,num_gpus,offpeak\n1,2,1,maybe\n"))


def test_a_missing_file_and_a_bad_gpu_spec_are_clear() -> None:
    with pytest.raises(TraceError, match="does not exist"):
        read_trace("/nonexistent/trace.csv")
    assert parse_gpus_spec("2x80,1x24") == [80 * 1024, 80 * 1024, 24 * 1024]
    with pytest.raises(TraceError, match="bad GPU spec '8by24'"):
        parse_gpus_spec("8by24")


def test_a_trace_saved_by_a_spreadsheet_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    p = tmp_path / "t.csv"
    p.write_bytes("submit_time_s,duration_s,num_gpus\n1,2,1\n".encode("utf-8-sig"))

    [job] = read_trace(p)

    assert (job.submit_s, job.duration_s, job.gpus) == (1.0, 2.0, 1)


def test_a_run_time_of_years_is_refused_as_a_unit_mistake(tmp_path: Path) -> None:
    with pytest.raises(
        TraceError, match=r"line 3: column 'duration_s' is 1e\+11 s, over 1095 days: give seconds"
    ):
        read_trace(write(tmp_path, "submit_time_s,duration_s,num_gpus\n1,2,1\n3,1e11,1\n"))
