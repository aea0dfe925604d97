"""Sweep expansion: grids and lists, placeholders, quoting, names, limits; all pure (no SQL, no Redis)."""

from __future__ import annotations

import pytest

from scheduler.errors import SpecError
from scheduler.spec import parse_spec
from scheduler.sweeps import expand, expand_all, render


def _expand(**fields: object) -> list[tuple[str, str, dict[str, object]]]:
    spec = parse_spec({"gpus": 0, **fields})
    return [(task.spec.command, task.spec.name or "", task.params) for task in expand(spec)]


def test_a_grid_makes_every_combination_with_the_last_parameter_varying_fastest() -> None:
    tasks = _expand(command="train --lr {lr} --bs {bs}", sweep={"lr": [0.1, 0.01], "bs": [32, 64, 128]})

    assert [params for _, _, params in tasks] == [
        {"lr": lr, "bs": bs} for lr in (0.1, 0.01) for bs in (32, 64, 128)
    ]
    assert tasks[0][0] == "train --lr 0.1 --bs 32"


def test_shell_text_is_left_alone_and_values_are_quoted_only_when_needed() -> None:
    tasks = _expand(
        command="cd ${HOME} && run --x {x} --flag {flag} | awk '{print $1}'",
        sweep=[{"x": "a b", "flag": True}, {"x": "$(reboot)", "flag": False}],
    )

    assert [command for command, _, _ in tasks] == [
        "cd ${HOME} && run --x 'a b' --flag true | awk '{print $1}'",
        "cd ${HOME} && run --x '$(reboot)' --flag false | awk '{print $1}'",
    ]


def test_each_task_is_named_after_the_spec_or_its_command_followed_by_its_parameters() -> None:
    default = _expand(command="python train.py --lr {lr}", sweep={"lr": [0.1]})
    named = _expand(
        command="python train.py --lr {lr} --opt {opt}", name="run", sweep={"lr": [0.1], "opt": ["a b"]}
    )

    assert default[0][1] == "train.py lr:0.1"
    assert named[0][1] == "run lr:0.1 opt:a b"


def test_env_values_may_use_the_parameters_too() -> None:
    spec = parse_spec({"command": "train", "gpus": 0, "env": {"SEED": "{seed}"}, "sweep": {"seed": [1, 2]}})

    assert [task.spec.env for task in expand(spec)] == [{"SEED": "1"}, {"SEED": "2"}]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"command": "train {lr} {wd}", "sweep": {"lr": [1]}}, "{wd}, which is not a sweep parameter"),
        ({"command": "train {lr}", "sweep": [{"lr": 1}, {"bs": 2}]}, "(sweep set 2)"),
        ({"command": "train {lr}", "sweep": {"lr": [1], "bs": [2]}}, "'bs' is not used"),
        ({"command": "t {a} {b}", "sweep": {"a": list(range(100)), "b": list(range(11))}}, "1100 tasks"),
    ],
)
def test_template_mistakes_are_refused_with_the_reason(fields: dict[str, object], message: str) -> None:
    with pytest.raises(SpecError) as caught:
        expand(parse_spec({"gpus": 0, **fields}))

    assert message in caught.value.message
    assert caught.value.errors[0]["field"] == "sweep"


@pytest.mark.parametrize(
    ("sweep", "message"),
    [
        ({}, "sweep grid is empty"),
        ([], "sweep list is empty"),
        ({"lr": []}, "needs a non-empty list"),
        ({"1lr": [1]}, "must be letters, digits and _"),
        ({"lr": [{"nested": 1}]}, "must be a number, a string or true/false"),
        ("lr=1", "sweep must be a grid"),
    ],
)
def test_malformed_sweeps_fail_validation_with_a_plain_message(sweep: object, message: str) -> None:
    with pytest.raises(SpecError) as caught:
        parse_spec({"command": "x {lr}", "sweep": sweep})

    assert message in caught.value.message


def test_a_batch_counts_its_sweeps_against_the_cap_and_names_the_bad_spec() -> None:
    big = parse_spec({"command": "x {a}", "gpus": 0, "sweep": {"a": list(range(600))}})
    with pytest.raises(SpecError, match="the batch would make 1200 tasks"):
        expand_all([big, big])
    bad = parse_spec({"command": "x {a} {b}", "gpus": 0, "sweep": {"a": [1]}})
    with pytest.raises(SpecError) as caught:
        expand_all([parse_spec({"command": "ok"}), bad])
    assert caught.value.message.startswith("spec 2 of the batch:")
    assert caught.value.errors[0]["field"] == "specs.1.sweep"


@pytest.mark.parametrize(
    "template",
    ["printf %s {v}", 'printf %s "run-{v}"', "printf %s 'run-{v}'", 'printf %s "a \\"b\\" {v}"'],
)
@pytest.mark.parametrize("value", ["a b", "it's", 'say "hi"', "$HOME `id` \\n; rm -rf x"])
def test_a_value_reads_as_itself_inside_double_quotes_single_quotes_or_none(
    template: str, value: str
) -> None:
    import subprocess

    command = render(template, {"v": value}, quote=True)
    printed = subprocess.run(["sh", "-c", command], capture_output=True, text=True, check=True).stdout

    expected = {"printf %s {v}": value, 'printf %s "a \\"b\\" {v}"': f'a "b" {value}'}.get(
        template, f"run-{value}"
    )
    assert printed == expected, command
