"""`submit --param NAME=V1,V2 --param NAME=1..5`: a sweep from the command line, with no spec file."""

from __future__ import annotations

import json

import pytest

from api.cli.sweep_params import param_grid, with_param_grid
from scheduler.errors import NightshiftError
from tests.cli.conftest import cli_as


def test_values_keep_how_they_were_typed_and_ranges_count_either_way():
    grid = param_grid(["lr=1e-3, 1e-4", "bs=32,64", "seed=1..3", "down=5..1..2", "model=gpt2,llama"])

    assert grid == {
        "lr": ["1e-3", "1e-4"],  # as typed: 0.001 would not read back as 1e-3
        "bs": [32, 64],
        "seed": [1, 2, 3],
        "down": [5, 3, 1],
        "model": ["gpt2", "llama"],
    }


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (["lr"], "give NAME=V1,V2 or NAME=1..5"),
        (["1x=2"], "give NAME=V1,V2 or NAME=1..5"),
        (["lr=1", "lr=2"], "--param lr is given twice"),
        (["lr=,"], "--param lr has no values"),
    ],
)
def test_a_param_that_is_not_name_equals_values_says_how_to_write_it(options, said):
    with pytest.raises(NightshiftError, match=said):
        param_grid(options)


def test_params_join_a_spec_files_grid_but_not_its_list_of_sets():
    spec = {"command": "t --lr {lr} --bs {bs}", "sweep": {"lr": [0.1], "bs": [8]}}

    assert with_param_grid(spec, {"lr": ["1e-3"]})["sweep"] == {"lr": ["1e-3"], "bs": [8]}
    assert with_param_grid(spec, {}) is spec
    with pytest.raises(NightshiftError, match="list of parameter sets"):
        with_param_grid({"command": "t {lr}", "sweep": [{"lr": 1}]}, {"lr": [2]})


def test_submit_with_params_makes_one_task_per_combination(
    cluster, a100_node, make_identity, monkeypatch, tmp_path
):
    _, alice = make_identity("alice", "vision")
    with cli_as(cluster, alice, monkeypatch, tmp_path / "alice") as nightshift:
        made = nightshift(
            "submit", "--json", "--param", "lr=1e-3,1e-4", "--param", "seed=1..2", "--max-running", "2",
            "--", "python", "train.py", "--lr", "{lr}", "--seed", "{seed}",
        )  # fmt: skip
        unused = nightshift("submit", "--param", "lr=1,2", "--", "python", "train.py")

    assert made.exit_code == 0, made.output
    sweep = json.loads(made.stdout)
    assert [task["command"] for task in sweep["tasks"]] == [
        "python train.py --lr 1e-3 --seed 1",
        "python train.py --lr 1e-3 --seed 2",
        "python train.py --lr 1e-4 --seed 1",
        "python train.py --lr 1e-4 --seed 2",
    ]
    assert sweep["max_running"] == 2
    assert (
        unused.exit_code == 1 and "sweep parameter 'lr' is not used: put {lr} in the command" in unused.stderr
    )


def test_a_range_too_long_says_how_many_values_it_gives_and_what_to_do():
    with pytest.raises(NightshiftError, match=r"--param lr=1\.\.100000 gives 100000 values; a parameter takes at "
                       r"most 1000: take a larger step \(lr=1\.\.100000\.\.STEP\)"):  # fmt: skip
        param_grid(["lr=1..100000"])
    assert len(param_grid(["lr=1..100000..100"])["lr"]) == 1000
