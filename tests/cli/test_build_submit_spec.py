"""`nightshift submit` turns a spec file, options and the words after `--` into one spec."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime

import pytest
from typer.testing import CliRunner

from api.cli.app import app, build_submit_spec, env_from_options
from scheduler.errors import NightshiftError, SpecError
from scheduler.spec import parse_spec

MORNING = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)
NO_OVERRIDES: dict[str, object] = {"gpus": None, "priority": None, "name": None}


@pytest.fixture(autouse=True)
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_words_after_the_double_dash_are_joined_into_the_command(tmp_path):
    spec = build_submit_spec(["python", "train.py", "--lr", "3e-4"], UTC, MORNING, NO_OVERRIDES, None)

    assert spec == {"command": "python train.py --lr 3e-4", "workdir": str(tmp_path)}
    assert parse_spec(spec).command == "python train.py --lr 3e-4"


@pytest.mark.parametrize(
    ("words", "command"),
    [
        (["train.py", "--lr", "0.1"], "python train.py --lr 0.1"),
        (["scripts/run.sh"], "bash scripts/run.sh"),
        (["./train.py"], "./train.py"),  # a path: the shell runs it itself
        (["python3", "train.py"], "python3 train.py"),
        (["true.sh"], "bash true.sh"),
    ],
)
def test_a_script_named_as_the_command_runs_with_its_interpreter_and_says_so(words, command):
    notes: list[str] = []

    spec = build_submit_spec(words, UTC, MORNING, NO_OVERRIDES, None, notes=notes)

    assert spec["command"] == command
    rewritten = command != " ".join(words)
    assert notes == (
        [f"running `{command}`: {words[0]} is a script, not a command on PATH"] if rewritten else []
    )


def test_a_script_on_path_runs_as_typed(tmp_path, monkeypatch):
    (tmp_path / "bin").mkdir()
    tool = tmp_path / "bin" / "prep.sh"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")

    assert build_submit_spec(["prep.sh", "a"], UTC, MORNING, NO_OVERRIDES, None)["command"] == "prep.sh a"


def test_a_single_quoted_command_is_kept_as_it_is():
    spec = build_submit_spec(["echo a  b && ls"], UTC, MORNING, NO_OVERRIDES, None)

    assert spec["command"] == "echo a  b && ls"


def test_the_workdir_defaults_to_where_submit_runs(tmp_path):
    assert build_submit_spec(["true"], UTC, MORNING, {}, None)["workdir"] == str(tmp_path)


def test_options_override_the_spec_file_and_unset_options_do_not(tmp_path):
    path = tmp_path / "train.yaml"
    path.write_text("command: python train.py\ngpus: 1\npriority: low\nworkdir: /data/run\ntags: [nightly]\n")

    spec = build_submit_spec([str(path)], UTC, MORNING, {"gpus": 2, "priority": None, "name": "big"}, None)

    assert spec == {
        "command": "python train.py",
        "gpus": 2,
        "priority": "low",
        "workdir": "/data/run",
        "tags": ["nightly"],
        "name": "big",
    }
    assert parse_spec(spec).gpus == 2


def test_env_options_add_to_the_files_env_and_tags_and_workdir_replace_its(tmp_path):
    path = tmp_path / "train.yaml"
    path.write_text("command: python train.py\nenv: {SEED: '1', MODE: fast}\ntags: [nightly]\n")
    overrides = {
        "env": env_from_options(["MODE=slow", "URL=a=b", "EMPTY="]),
        "tags": ["ablation"],
        "workdir": "runs",
    }

    spec = build_submit_spec([str(path)], UTC, MORNING, overrides, None)

    assert spec["env"] == {"SEED": "1", "MODE": "slow", "URL": "a=b", "EMPTY": ""}
    assert spec["tags"] == ["ablation"] and spec["workdir"] == str(tmp_path / "runs")
    assert parse_spec(spec).env["URL"] == "a=b"


@pytest.mark.parametrize("pair", ["SEED", "=1"])
def test_an_env_option_without_a_name_and_value_is_a_clear_error(pair):
    with pytest.raises(NightshiftError, match=f"--env wants NAME=VALUE, got '{pair}'"):
        env_from_options([pair])


def test_a_command_after_the_spec_file_replaces_the_files_command(tmp_path):
    path = tmp_path / "train.yml"
    path.write_text("command: python train.py\ngpus: 2\n")

    spec = build_submit_spec([str(path), "python", "eval.py"], UTC, MORNING, NO_OVERRIDES, None)

    assert (spec["command"], spec["gpus"]) == ("python eval.py", 2)


def test_a_json_spec_file_is_read_too(tmp_path):
    path = tmp_path / "job.json"
    path.write_text(json.dumps({"command": "echo hi", "gpus": 0, "env": {"SEED": "1"}}))

    spec = build_submit_spec([str(path)], UTC, MORNING, NO_OVERRIDES, None)

    assert (spec["command"], spec["gpus"], spec["env"]) == ("echo hi", 0, {"SEED": "1"})


def test_a_missing_spec_file_is_an_error_not_a_command(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)

    with pytest.raises(NightshiftError, match=r"spec file typo\.yaml not found"):
        build_submit_spec(["typo.yaml"], UTC, MORNING, NO_OVERRIDES, None)


def test_after_a_clock_time_means_its_next_occurrence_in_the_cluster_zone():
    tonight = build_submit_spec(["true"], UTC, MORNING, NO_OVERRIDES, "23:00")
    late = build_submit_spec(["true"], UTC, MORNING.replace(hour=23, minute=30), NO_OVERRIDES, "23:00")

    assert tonight["not_before"] == "2026-03-01T23:00:00+00:00"
    assert late["not_before"] == "2026-03-02T23:00:00+00:00"
    assert parse_spec(tonight).not_before == datetime(2026, 3, 1, 23, 0, tzinfo=UTC)


@pytest.mark.parametrize("delay", ["+2h", "2h", "in 2 hours", "in 120 minutes", "in 2 hrs", "+120 mins"])
def test_after_a_delay_counts_from_now(delay):
    spec = build_submit_spec(["true"], UTC, MORNING, NO_OVERRIDES, delay)

    assert spec["not_before"] == "2026-03-01T12:00:00+00:00"


def test_a_deadline_is_read_as_after_is_in_the_cluster_zone():
    spec = build_submit_spec(["true"], UTC, MORNING, NO_OVERRIDES, "+1h", deadline="tomorrow 8am")
    in_two_hours = build_submit_spec(["true"], UTC, MORNING, NO_OVERRIDES, None, deadline="+2h")

    assert spec["deadline"] == "2026-03-02T08:00:00+00:00"
    assert parse_spec(spec).deadline == datetime(2026, 3, 2, 8, 0, tzinfo=UTC)
    assert in_two_hours["deadline"] == "2026-03-01T12:00:00+00:00" and "not_before" not in in_two_hours
    with pytest.raises(SpecError, match="cannot read the time"):
        build_submit_spec(["true"], UTC, MORNING, NO_OVERRIDES, None, deadline="someday")


@pytest.mark.parametrize(
    ("when", "message"), [("25:00", "not a time of day"), ("someday", "cannot read the time")]
)
def test_an_unreadable_after_is_a_clear_error(when, message):
    with pytest.raises(SpecError, match=message):
        build_submit_spec(["true"], UTC, MORNING, NO_OVERRIDES, when)


def test_without_a_command_there_is_nothing_to_run(tmp_path):
    path = tmp_path / "nocommand.yaml"
    path.write_text("gpus: 2\n")

    with pytest.raises(NightshiftError, match="nothing to run"):
        build_submit_spec([], UTC, MORNING, NO_OVERRIDES, None)
    with pytest.raises(NightshiftError, match="nothing to run"):
        build_submit_spec([str(path)], UTC, MORNING, NO_OVERRIDES, None)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("command: [unclosed\n", "is not valid YAML", id="broken YAML"),
        pytest.param("- command: echo hi\n", "must hold a mapping of fields, got list", id="a list"),
        pytest.param("", "is empty", id="empty"),
    ],
)
def test_a_bad_yaml_file_is_a_clear_error(tmp_path, text, message):
    path = tmp_path / "bad.yaml"
    path.write_text(text)

    with pytest.raises(SpecError, match=message) as raised:
        build_submit_spec([str(path)], UTC, MORNING, NO_OVERRIDES, None)
    assert str(path) in raised.value.message


def test_submit_with_a_bad_yaml_file_exits_2_with_the_message_and_sends_nothing(tmp_path, monkeypatch):
    path = tmp_path / "bad.yaml"
    path.write_text("command: [unclosed\n")
    # nothing listens there: had the CLI tried to send, it would say "cannot reach"
    monkeypatch.setenv("NIGHTSHIFT_API_URL", "http://127.0.0.1:9")

    result = CliRunner().invoke(app, ["submit", str(path)])

    assert result.exit_code == 2
    assert "is not valid YAML" in " ".join(result.output.split())
    assert "cannot reach" not in result.output


def test_options_after_the_spec_file_are_refused_not_run_as_the_command(tmp_path, monkeypatch):
    path = tmp_path / "full.yaml"
    path.write_text("command: python train.py\nretries: 1\n")
    monkeypatch.setenv("NIGHTSHIFT_API_URL", "http://127.0.0.1:9")  # nothing may be sent

    result = CliRunner().invoke(app, ["submit", str(path), "--gpus", "2", "--priority", "low"])
    replaced = CliRunner().invoke(app, ["submit", str(path), "--", "python", "eval.py"])

    output = " ".join(result.output.split())
    assert result.exit_code == 2, result.output
    assert f"options go before the spec file: nightshift submit --gpus 2 --priority low {path}" in output
    assert "cannot reach" not in result.output
    assert "cannot reach" in replaced.output  # `FILE -- COMMAND` is a valid submission (sent, then refused)


def test_an_after_time_that_has_passed_is_kept_and_said_to_start_at_once():
    notes: list[str] = []

    passed = build_submit_spec(["true"], UTC, MORNING, NO_OVERRIDES, "2020-01-01T00:00", notes=notes)
    build_submit_spec(["true"], UTC, MORNING, NO_OVERRIDES, "23:00", notes=notes)  # later today: no note

    assert passed["not_before"] == "2020-01-01T00:00:00+00:00"
    assert notes == ["--after 2020-01-01T00:00: 2020-01-01 00:00 has passed, so it may start at once"]
