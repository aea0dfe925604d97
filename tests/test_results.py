"""Reading metrics files safely, and comparing tasks by a metric (which way is better, the best row)."""

from __future__ import annotations

import os
from pathlib import Path

from scheduler.results import MAX_METRICS_BYTES, ResultRow, compare, goal_of, read_metrics_file


def test_a_metrics_object_of_scalars_is_read_as_it_is(tmp_path: Path) -> None:
    (tmp_path / "metrics.json").write_text('{"loss": 0.25, "epochs": 3, "converged": true, "note": "ok"}')

    assert read_metrics_file(tmp_path) == ({"loss": 0.25, "epochs": 3, "converged": True, "note": "ok"}, None)


def test_no_file_is_no_metrics_and_no_note(tmp_path: Path) -> None:
    assert read_metrics_file(tmp_path) == (None, None)


def test_bad_files_become_notes_never_errors(tmp_path: Path) -> None:
    cases = {
        "list.json": ("[1, 2]", "must hold a JSON object"),
        "text.json": ("loss 0.3", "not valid JSON"),
        "bytes.json": (b"\xff\xfe".decode("latin-1"), "not valid JSON"),
    }
    for name, (content, expected) in cases.items():
        (tmp_path / name).write_text(content, encoding="latin-1")
        metrics, note = read_metrics_file(tmp_path, name)
        assert metrics is None and note is not None and expected in note, (name, note)

    (tmp_path / "big.json").write_text('{"x": "' + "a" * MAX_METRICS_BYTES + '"}')
    assert "at most" in (read_metrics_file(tmp_path, "big.json")[1] or "")


def test_non_scalar_and_non_finite_values_are_dropped_with_a_note(tmp_path: Path) -> None:
    (tmp_path / "metrics.json").write_text('{"loss": NaN, "acc": 0.9, "curve": [1, 2], "cfg": {"a": 1}}')

    metrics, note = read_metrics_file(tmp_path)

    assert metrics == {"acc": 0.9}
    assert note is not None and all(name in note for name in ("'loss'", "'curve'", "'cfg'"))


def test_symlinks_and_special_files_are_not_read(tmp_path: Path) -> None:
    (tmp_path / "metrics.json").symlink_to("/etc/hostname")
    os.mkfifo(tmp_path / "fifo.json")
    (tmp_path / "sub").symlink_to("/etc")

    assert "symbolic link" in (read_metrics_file(tmp_path)[1] or "")
    assert "not a regular file" in (read_metrics_file(tmp_path, "fifo.json")[1] or "")
    assert "symbolic link" in (read_metrics_file(tmp_path, "sub/hostname")[1] or "")
    assert "relative path" in (read_metrics_file(tmp_path, "../metrics.json")[1] or "")


def test_loss_like_names_are_minimized_and_the_rest_maximized() -> None:
    assert [goal_of(name) for name in ("loss", "val_loss", "error-rate", "WER", "train/time")] == ["min"] * 5
    assert [goal_of(name) for name in ("accuracy", "f1", "reward", "lossless_ratio")] == ["max"] * 4


def _row(task_id: int, **metrics: object) -> ResultRow:
    return ResultRow(task_id, f"t{task_id}", "succeeded", {"lr": task_id / 10}, metrics)


def test_compare_sorts_best_first_marks_one_best_row_and_puts_missing_values_last() -> None:
    rows = [_row(1, loss=0.5, acc=0.7), _row(2, loss=0.2, acc=0.6), _row(3), _row(4, loss=0.9, acc=0.9)]

    by_loss = compare(rows)
    by_acc = compare(rows, "acc")
    flipped = compare(rows, "loss", "max")

    assert (by_loss.sort, by_loss.goal, by_loss.best) == ("loss", "min", 2)
    assert [r.task_id for r in by_loss.rows] == [2, 1, 4, 3]
    assert [r.best for r in by_loss.rows] == [True, False, False, False]
    assert by_loss.missing == [3]
    assert (by_acc.goal, by_acc.best) == ("max", 4)
    assert flipped.best == 4
    assert compare([_row(1)]).sort is None


def test_a_run_that_failed_after_writing_its_metrics_is_sorted_but_never_the_best() -> None:
    failed = ResultRow(1, "t1", "failed", {"lr": 0.1}, {"loss": 0.1})
    rows = [failed, _row(2, loss=0.5), _row(3, loss=0.3)]

    comparison = compare(rows)

    assert [r.task_id for r in comparison.rows] == [1, 3, 2]
    assert comparison.best == 3 and [r.best for r in comparison.rows] == [False, True, False]
    assert compare([failed]).best is None


def test_a_parameter_asked_as_the_sort_ranks_by_the_default_metric() -> None:
    rows = [_row(1, loss=0.5), _row(2, loss=0.2)]

    by_lr = compare(rows, "lr")  # "the best lr": the lr of the best run, by its metric

    assert (by_lr.sort, by_lr.best) == ("loss", 2) and [r.task_id for r in by_lr.rows] == [2, 1]
    assert compare(rows, "acc").sort == "acc"  # a metric no run reported stays what was asked
