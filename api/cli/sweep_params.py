"""`submit --param lr=1e-3,1e-4 --param seed=1..3`: a sweep from the command line, with no spec file
(Slurm's `--array`, with names). Each `--param` is one parameter of the grid; the command names it as
`{lr}`, and every combination becomes a task."""

from __future__ import annotations

import re
from typing import Any

from scheduler.errors import NightshiftError
from scheduler.spec import MAX_SWEEP_VALUES, SweepValue
from scheduler.sweeps import typed_values, value_range

_PARAM = re.compile(r"(?P<name>[A-Za-z_][A-Za-z0-9_]{0,63})=(?P<values>.+)", re.DOTALL)
_RANGE = re.compile(r"(?P<first>-?\d+)\.\.(?P<last>-?\d+)(?:\.\.(?P<step>-?\d+))?")


def param_grid(options: list[str]) -> dict[str, list[SweepValue]]:
    """The grid `--param` options give: `NAME=V1,V2,...` (numbers where every value reads back as typed,
    else text as typed, so `1e-3` stays `1e-3`) or `NAME=FIRST..LAST[..STEP]`. NightshiftError on anything
    else, or on a name given twice."""
    grid: dict[str, list[SweepValue]] = {}
    for option in options:
        match = _PARAM.fullmatch(option.strip())
        if match is None:
            raise NightshiftError(
                f"--param {option!r}: give NAME=V1,V2 or NAME=1..5 (e.g. --param lr=1e-3,1e-4); the command "
                "names it as {NAME}"
            )
        name, values = match["name"], match["values"]
        if name in grid:
            raise NightshiftError(f"--param {name} is given twice: list its values once, comma-separated")
        span = _RANGE.fullmatch(values.strip())
        if span is not None:
            first, last, step = int(span["first"]), int(span["last"]), max(abs(int(span["step"] or 1)), 1)
            count = abs(last - first) // step + 1
            if count > MAX_SWEEP_VALUES:
                raise NightshiftError(
                    f"--param {option.strip()} gives {count} values; a parameter takes at most "
                    f"{MAX_SWEEP_VALUES}: take a larger step ({name}={first}..{last}..STEP) or a shorter "
                    "range"
                )
            grid[name] = list(value_range(first, last, step))
        else:
            grid[name] = typed_values([value.strip() for value in values.split(",") if value.strip()])
        if not grid[name]:
            raise NightshiftError(f"--param {name} has no values: give them comma-separated, e.g. {name}=1,2")
    return grid


def with_param_grid(spec: dict[str, Any], grid: dict[str, list[SweepValue]]) -> dict[str, Any]:
    """`spec` with `grid` added to its `sweep` grid (a `--param` replaces a spec file's values of the same
    name); NightshiftError where the file's sweep is a list of sets, which a grid cannot join."""
    if not grid:
        return spec
    sweep = spec.get("sweep")
    if isinstance(sweep, list):
        raise NightshiftError(
            "the spec file's sweep is a list of parameter sets: add these values to it there, not with "
            "--param"
        )
    return {**spec, "sweep": {**(sweep or {}), **grid}}
