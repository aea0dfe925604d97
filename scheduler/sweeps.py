"""Sweeps: one spec with a `sweep` becomes one task per parameter set (pure: no SQL, no Redis).

A grid `{lr: [0.1, 0.01], bs: [32, 64]}` gives every combination (in the order written, the last parameter
varying fastest); a list `[{lr: 0.1}, {lr: 0.01, bs: 64}]` gives exactly those sets. The command is a
template: `{lr}` is replaced by the value, quoted for where it stands (bare, or inside the template's
single or double quotes) so the shell reads it as written; `${HOME}` and other shell text are left alone.
The env values may use the same placeholders; each task is named after the spec's name (or its
command) followed by its parameters (`train lr:0.1 bs:32`). Every parameter must be used, every
placeholder must be a parameter, and a sweep expands into at most `MAX_SWEEP_TASKS` tasks.
"""

from __future__ import annotations

import itertools
import math
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler.errors import SpecError
from scheduler.spec import MAX_SWEEP_VALUES, SweepValue, TaskSpec, parse_spec
from scheduler.task_names import default_name

MAX_SWEEP_TASKS = 1000
# `{name}` not preceded by `$` (so `${HOME}` stays a shell variable)
PLACEHOLDER = re.compile(r"(?<!\$)\{([A-Za-z_][A-Za-z0-9_]*)\}")
_NAME_UNSAFE = re.compile(r"[^\w.\-+@:/ ]")
MAX_NAME_CHARS = 120

Params = dict[str, SweepValue]


@dataclass(frozen=True, slots=True)
class Expanded:
    """One task of a sweep: its own spec (no `sweep` left) and the parameters that made it."""

    spec: TaskSpec
    params: Params


def _sweep_error(message: str) -> SpecError:
    return SpecError(message, [{"field": "sweep", "message": message}])


def count_sets(sweep: Mapping[str, Sequence[SweepValue]] | Sequence[Mapping[str, SweepValue]]) -> int:
    """How many tasks a sweep makes, without building them (a grid's product can be huge)."""
    if isinstance(sweep, Mapping):
        return math.prod(len(values) for values in sweep.values())
    return len(sweep)


def parameter_sets(
    sweep: Mapping[str, Sequence[SweepValue]] | Sequence[Mapping[str, SweepValue]],
    limit: int = MAX_SWEEP_TASKS,
) -> list[Params]:
    """Every parameter set of a grid (cartesian product) or a list; SpecError when empty or over `limit`."""
    count = count_sets(sweep)
    if count == 0:
        raise _sweep_error("sweep is empty: it would make no task")
    if count > limit:
        raise _sweep_error(f"sweep would make {count} tasks; at most {limit} per submission")
    if isinstance(sweep, Mapping):
        names = list(sweep)
        return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*sweep.values())]
    return [dict(item) for item in sweep]


def format_value(value: SweepValue) -> str:
    """A parameter's text: `true`/`false`, numbers as Python writes them, strings as they are."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def value_range(first: int, last: int, step: int) -> list[int]:
    """A shell's `{first..last..step}`: every value from `first` to `last`, either way, `step` apart (its
    sign ignored, as bash does); past MAX_SWEEP_VALUES only one more, so the spec says the sweep is too
    long rather than this building it."""
    step = max(abs(step), 1) * (1 if last >= first else -1)
    count = min(abs(last - first) // abs(step) + 1, MAX_SWEEP_VALUES + 1)
    return [first + i * step for i in range(count)]


def typed_values(values: list[str]) -> list[SweepValue]:
    """Values as numbers when every one of them reads back as written ("32", "0.1"), else as written."""
    numbers: list[SweepValue] = []
    for value in values:
        number: int | float
        try:
            number = int(value) if re.fullmatch(r"-?\d+", value) else float(value)
        except ValueError:
            return list(values)
        if str(number) != value:
            return list(values)
        numbers.append(number)
    return numbers


def placeholders(text: str) -> list[str]:
    """The `{name}` placeholders of a template, in order of appearance."""
    return PLACEHOLDER.findall(text)


def render(template: str, params: Mapping[str, SweepValue], *, quote: bool) -> str:
    """Replace each `{name}` by its value (shell-quoted when `quote`); SpecError for an unknown name."""

    def substitute(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in params:
            known = ", ".join(sorted(params)) or "none"
            raise _sweep_error(
                f"the template names {{{name}}}, which is not a sweep parameter (parameters: {known})"
            )
        text = format_value(params[name])
        return _quoted_for(text, _quotes_at(template, match.start())) if quote else text

    return PLACEHOLDER.sub(substitute, template)


def _quotes_at(command: str, position: int) -> str | None:
    """The shell quotes open at `position` of `command`: `'`, `"` or None (outside any)."""
    open_quote: str | None = None
    escaped = False
    for char in command[:position]:
        if escaped:
            escaped = False
        elif char == "\\" and open_quote != "'":
            escaped = True
        elif open_quote is None and char in "'\"":
            open_quote = char
        elif char == open_quote:
            open_quote = None
    return open_quote


def _quoted_for(text: str, open_quote: str | None) -> str:
    """`text` so that the shell reads it as itself where it stands: inside double quotes `"`, `\\`, `$` and
    backticks escaped, inside single quotes `'` closed and reopened, elsewhere `shlex.quote`."""
    if open_quote == '"':
        return re.sub(r'(["\\$`])', r"\\\1", text)
    if open_quote == "'":
        return text.replace("'", "'\\''")
    return shlex.quote(text)


def _safe_name(text: str) -> str:
    return _NAME_UNSAFE.sub("_", text).strip()[:MAX_NAME_CHARS] or "task"


def task_name(base: str | None, command: str, params: Mapping[str, SweepValue]) -> str:
    """`train lr:0.1 bs:32`: the spec's name (or the command's), then the parameters."""
    label = base or default_name(command)
    return _safe_name(" ".join([label, *(f"{key}:{format_value(value)}" for key, value in params.items())]))


def _check_usage(spec: TaskSpec, sets: list[Params]) -> None:
    """Every placeholder is a parameter of every set, and every parameter appears somewhere."""
    texts = [spec.command, *spec.env.values()]
    used = {name for text in texts for name in placeholders(text)}
    for number, params in enumerate(sets, 1):
        missing = sorted(used - params.keys())
        if missing:
            where = "" if isinstance(spec.sweep, dict) else f" (sweep set {number})"
            known = ", ".join(sorted(params))
            raise _sweep_error(
                f"the command names {{{missing[0]}}}, which is not a sweep parameter{where}; "
                f"parameters: {known}"
            )
    unused = sorted({name for params in sets for name in params} - used)
    if unused:
        raise _sweep_error(
            f"sweep parameter {unused[0]!r} is not used: put {{{unused[0]}}} in the command "
            "(otherwise its tasks would all be the same)"
        )


def expand(spec: TaskSpec, limit: int = MAX_SWEEP_TASKS) -> list[Expanded]:
    """The tasks a spec stands for: itself when it has no sweep, else one per parameter set."""
    if spec.sweep is None:
        return [Expanded(spec, {})]
    sets = parameter_sets(spec.sweep, limit)
    _check_usage(spec, sets)
    base: dict[str, Any] = spec.model_dump(exclude={"sweep", "max_running"}, exclude_none=True)
    expanded = []
    for params in sets:
        data = dict(base)
        data["command"] = render(spec.command, params, quote=True)
        data["name"] = task_name(spec.name, spec.command, params)
        if spec.env:
            data["env"] = {key: render(value, params, quote=False) for key, value in spec.env.items()}
        try:
            task_spec = parse_spec(data)
        except SpecError as exc:
            raise SpecError(
                f"the sweep set {params} gives an invalid task: {exc.message}", exc.errors
            ) from None
        expanded.append(Expanded(task_spec, params))
    return expanded


def expand_all(specs: Sequence[TaskSpec], limit: int = MAX_SWEEP_TASKS) -> list[Expanded]:
    """Every task of a batch (sweeps expanded); SpecError naming the item when one is wrong or too many."""
    total = sum(count_sets(spec.sweep) if spec.sweep is not None else 1 for spec in specs)
    if not specs:
        raise SpecError(
            "the batch is empty: give at least one spec", [{"field": "specs", "message": "empty"}]
        )
    if total > limit:
        raise SpecError(
            f"the batch would make {total} tasks; at most {limit} per submission",
            [{"field": "specs", "message": f"at most {limit} tasks"}],
        )
    tasks: list[Expanded] = []
    for number, spec in enumerate(specs, 1):
        try:
            tasks += expand(spec, limit)
        except SpecError as exc:
            raise in_batch(exc, number, len(specs)) from None
    return tasks


def in_batch(exc: SpecError, number: int, size: int) -> SpecError:
    """The error of spec `number` (1-based) of a batch, naming it (unchanged for a batch of one)."""
    if size == 1:
        return exc
    errors = [
        {**item, "field": f"specs.{number - 1}.{item.get('field') or ''}".rstrip(".")} for item in exc.errors
    ]
    return SpecError(f"spec {number} of the batch: {exc.message}", errors)
