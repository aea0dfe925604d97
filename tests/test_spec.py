"""The task spec: what is accepted, and the messages people get for what is not."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from scheduler.errors import SpecError
from scheduler.spec import load_spec_file, parse_spec
from scheduler.task_names import default_name
from scheduler.timeparse import parse_when


def test_a_minimal_spec_gets_the_documented_defaults():
    spec = parse_spec({"command": "  python train.py  "})
    assert spec.command == "python train.py"
    assert (spec.gpus, spec.priority, spec.retries, spec.offpeak) == (1, "normal", 0, False)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"command": ""}, "command must not be empty"),
        ({"command": "   "}, "command must not be empty"),
        ({}, "command is required"),
        ({"command": "x", "gpus": -1}, "gpus"),
        ({"command": "x", "gpus": "two"}, "gpus: Input should be a valid integer (got 'two')"),
        ({"command": "x", "frobnicate": 1}, "unknown field 'frobnicate'; allowed fields are: command,"),
        ({"command": "x", "prioritty": "high"}, "unknown field 'prioritty' (did you mean 'priority'?)"),
        (
            {"command": "x", "priority": "asap"},
            "priority: Input should be 'low', 'normal', 'high' or 'urgent' (got 'asap')",
        ),
        ({"command": "x", "conda_env": "a", "docker_image": "b"}, "not both"),
        ({"command": "x", "docker_image": "--privileged"}, "docker_image"),
        ({"command": "x", "conda_env": "-n"}, "conda_env"),
        ({"command": "x", "env": {"NIGHTSHIFT_TOKEN": "1"}}, "cannot be overridden"),
        ({"command": "x", "env": {"NVIDIA_VISIBLE_DEVICES": "all"}}, "'NVIDIA_VISIBLE_DEVICES' is set by"),
        ({"command": "x", "env": {"CUDA_DEVICE_ORDER": "FASTEST_FIRST"}}, "'CUDA_DEVICE_ORDER' is set by"),
        ({"command": "x", "env": {"1A": "1"}}, "env name"),
        ({"command": "x", "workdir": "relative/path"}, "absolute"),
        ({"command": "x", "gpus": 0, "gpu_memory_gb": 10}, "CPU-only"),
        ({"command": "x", "depends_on": [0]}, "positive"),
        ({"command": "x", "depends_on_any": [0]}, "depends_on_any holds task ids, which are positive; got 0"),
        ({"command": "x", "depends_on_any": list(range(1, 102))}, "depends_on_any"),
        ({"command": "x", "not_before": "2026-12-02T00:00:00Z", "deadline": "2026-12-01T00:00:00Z"}, "after"),
        ({"command": "a\x00b"}, "NUL"),
        ({"command": "nohup python train.py &"}, "command ends with '&'"),
    ],
)
def test_bad_specs_are_refused_with_a_message_naming_the_problem(data, expected):
    with pytest.raises(SpecError) as caught:
        parse_spec(data)
    assert expected in caught.value.message


def test_depends_on_any_sits_beside_depends_on_as_sorted_unique_ids():
    spec = parse_spec({"command": "x", "depends_on": [3], "depends_on_any": [9, 4, 9]})
    fields = list(spec.model_dump())

    assert spec.depends_on_any == [4, 9]
    assert fields.index("depends_on_any") == fields.index("depends_on") + 1


def test_a_spec_that_is_not_a_mapping_is_refused():
    with pytest.raises(SpecError, match="must be a JSON object"):
        parse_spec(["echo", "hi"])


def test_spec_files_load_from_yaml_and_json(tmp_path: Path):
    (tmp_path / "a.yaml").write_text("command: python a.py\ngpus: 2\n")
    (tmp_path / "b.json").write_text('{"command": "python b.py"}')
    assert load_spec_file(tmp_path / "a.yaml") == {"command": "python a.py", "gpus": 2}
    assert load_spec_file(tmp_path / "b.json") == {"command": "python b.py"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [("command: [unclosed", "not valid YAML"), ("", "is empty"), ("- a\n- b\n", "must hold a mapping")],
)
def test_broken_spec_files_get_a_clear_error(tmp_path: Path, text, expected):
    path = tmp_path / "job.yaml"
    path.write_text(text)
    with pytest.raises(SpecError, match=expected):
        load_spec_file(path)


def test_after_accepts_clock_times_delays_and_iso_dates():
    now = datetime(2026, 12, 1, 22, 0, tzinfo=UTC)
    assert parse_when("23:00", now, UTC) == now + timedelta(hours=1)
    assert parse_when("07:00", now, UTC) == datetime(2026, 12, 2, 7, 0, tzinfo=UTC)
    assert parse_when("+2h", now, UTC) == now + timedelta(hours=2)
    assert parse_when("30m", now, UTC) == now + timedelta(minutes=30)
    assert parse_when("2026-12-03T09:00", now, UTC) == datetime(2026, 12, 3, 9, 0, tzinfo=UTC)
    with pytest.raises(SpecError, match="cannot read the time"):
        parse_when("whenever", now, UTC)
    with pytest.raises(SpecError, match="not a time of day"):
        parse_when("25:00", now, UTC)


def test_after_accepts_today_tomorrow_and_am_pm_in_the_clusters_zone():
    now = datetime(2026, 12, 1, 22, 0, tzinfo=UTC)
    assert parse_when("tomorrow 9:00", now, UTC) == datetime(2026, 12, 2, 9, 0, tzinfo=UTC)
    assert parse_when("Tomorrow at 9am", now, UTC) == datetime(2026, 12, 2, 9, 0, tzinfo=UTC)
    assert parse_when("tomorrow 23:30", now, UTC) == datetime(2026, 12, 2, 23, 30, tzinfo=UTC)
    assert parse_when("today 11:30pm", now, UTC) == datetime(2026, 12, 1, 23, 30, tzinfo=UTC)
    assert parse_when("12am", now, UTC) == datetime(2026, 12, 2, 0, 0, tzinfo=UTC)
    assert parse_when("9pm", now, UTC) == datetime(2026, 12, 2, 21, 0, tzinfo=UTC)  # next 21:00
    # in Shanghai (UTC+8) 22:00 UTC is 06:00 on the 2nd: "tomorrow" is the 3rd there
    shanghai = ZoneInfo("Asia/Shanghai")
    assert parse_when("tomorrow 09:00", now, shanghai) == datetime(2026, 12, 3, 9, 0, tzinfo=shanghai)
    # across a DST change the wall-clock time holds (New York falls back on 2026-11-01)
    new_york = ZoneInfo("America/New_York")
    evening = datetime(2026, 10, 31, 22, 0, tzinfo=new_york)
    assert parse_when("tomorrow 9:00", evening, new_york).isoformat() == "2026-11-01T09:00:00-05:00"
    with pytest.raises(SpecError, match="already passed"):
        parse_when("today 21:00", now, UTC)
    with pytest.raises(SpecError, match="hour is 1-12"):
        parse_when("13pm", now, UTC)
    with pytest.raises(SpecError, match="cannot read the time 'tomorrow'"):
        parse_when("tomorrow", now, UTC)


def test_a_value_of_the_wrong_type_is_quoted_back_only_when_it_is_a_plain_value():
    with pytest.raises(SpecError) as listed:
        parse_spec({"command": ["echo", "hi"]})
    with pytest.raises(SpecError) as long_word:
        parse_spec({"command": "x", "gpus": "w" * 100})

    assert listed.value.message == "command: Input should be a valid string"
    assert long_word.value.message.endswith("(got '" + "w" * 56 + "...)")


@pytest.mark.parametrize(
    ("command", "name"),
    [
        ("python train.py --epochs 3", "train.py"),
        ("torchrun --nproc_per_node 4 train.py", "train.py"),  # not "4"
        ("python -m torch.distributed.run --nproc_per_node=8 scripts/finetune.py", "finetune.py"),
        ("accelerate launch --num_processes 2 sft.py", "sft.py"),
        ("CUDA_LAUNCH_BLOCKING=1 /usr/bin/python3 /home/a/eval.py", "eval.py"),
        ("bash -c 'cd exp && python eval.py'", "eval.py"),
        ("./run.sh 3", "run.sh"),
        ("python -m pytest -x", "pytest"),
        ('python3 -c "import json; print(1)"', "python3 -c"),  # not "\"import"
        ("sleep 300", "sleep"),
        ("cd exp && make train", "make"),  # not "cd"
        ("export CUDA_VISIBLE_DEVICES=0; ./train --fast", "train"),  # not "export"
        ("for i in 1 2 3; do echo step $i; sleep 1; done", "echo"),  # not "for"
        ("while true; do nvidia-smi; sleep 5; done", "nvidia-smi"),
        ("", "task"),
    ],
)
def test_a_task_without_a_name_is_named_after_what_it_runs(command, name):
    assert default_name(command) == name


def test_numbers_in_env_are_their_text_as_yaml_wrote_them() -> None:
    spec = parse_spec({"command": "x", "env": {"WORKERS": 4, "LR": 0.001, "NAME": "run"}})

    assert spec.env == {"WORKERS": "4", "LR": "0.001", "NAME": "run"}


@pytest.mark.parametrize(
    "command", ["a && b", "python t.py > log 2>&1", "python a.py & python b.py & wait", "make |& tee log"]
)
def test_an_ampersand_that_does_not_end_the_command_in_the_background_is_fine(command):
    assert parse_spec({"command": command}).command == command


def test_unquoted_dates_and_times_in_a_yaml_file_are_read_as_the_api_takes_them(tmp_path: Path) -> None:
    (tmp_path / "job.yaml").write_text(
        "command: python a.py\nnot_before: 2027-01-01T09:00:00\ndeadline: 2027-01-03\n"
        "env:\n  DAY: 2027-01-01\nsweep:\n  - 2027-01-02 10:00:00+08:00\n"
    )

    data = load_spec_file(tmp_path / "job.yaml")

    assert data["not_before"] == "2027-01-01T09:00:00" and data["deadline"] == "2027-01-03"
    assert data["env"] == {"DAY": "2027-01-01"} and data["sweep"] == ["2027-01-02T10:00:00+08:00"]
    json.dumps(data)  # what the CLI sends
    spec = parse_spec({key: value for key, value in data.items() if key != "sweep"})
    assert (spec.not_before, spec.deadline) == (datetime(2027, 1, 1, 9, 0), datetime(2027, 1, 3, 0, 0))


def test_one_parent_may_be_written_as_one_id(tmp_path: Path) -> None:
    (tmp_path / "job.yaml").write_text("command: python eval.py\ndepends_on: 36\ndepends_on_any: 7\n")

    spec = parse_spec(load_spec_file(tmp_path / "job.yaml"))

    assert (spec.depends_on, spec.depends_on_any) == ([36], [7])
    with pytest.raises(SpecError, match="depends_on"):
        parse_spec({"command": "x", "depends_on": True})
