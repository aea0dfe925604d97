"""The task spec: what a person asks nightshift to run. API, YAML/JSON files and the assistant share it."""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from datetime import date, datetime
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from scheduler.errors import SpecError

Priority = Literal["low", "normal", "high", "urgent"]
StopSignal = Literal["TERM", "INT", "USR1"]

MAX_COMMAND_CHARS = 16_000
MAX_ENV_VARS = 256
MAX_ENV_VALUE_CHARS = 32_768  # a quarter of Linux's limit on one variable (MAX_ARG_STRLEN, 128 KiB)
MAX_GPUS_ANY_CLUSTER = 64
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_NAME = re.compile(r"^[\w.\-+@:/ ]{1,120}$")
# a command that ends by sending itself to the background: `python train.py &` (not `a && b`, not `2>&1`)
_BACKGROUNDED = re.compile(r"(?<![&|>])&\s*$")
_CONDA_ENV = re.compile(r"[\w.+/][\w.\-+/]{0,199}")
_DOCKER_IMAGE = re.compile(r"^[a-z0-9][a-z0-9._\-/:@]{0,254}$")
_RESERVED_ENV_PREFIX = "NIGHTSHIFT_"
# which GPUs a job sees, and in what order: nightshift sets them to the GPUs it placed the task on (docker's
# runtime reads NVIDIA_VISIBLE_DEVICES; CUDA numbers GPUs as NVML does only in PCI_BUS_ID order)
_GPU_SELECTION_ENV = frozenset({"CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER"})
MAX_GRACE_SECONDS = 3600
MAX_RUNNING_LIMIT = 10_000  # the largest `max_running` of a sweep
LATEST_PLACEHOLDER = "{latest}"
_NODE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._\-]{0,127}$")
_GPU_MODEL = re.compile(r"^[\w .\-]{1,64}$")
_PARAM_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
MAX_SWEEP_PARAMS = 20
MAX_SWEEP_VALUES = 1000
SweepValue = bool | int | float | str
SweepGrid = dict[str, list[SweepValue]]
SweepList = list[dict[str, SweepValue]]


class GitSource(BaseModel):
    """Which code a task ran: the commit its workdir was at when it was submitted, the branch, and whether
    tracked files had changes not in that commit (then the commit alone does not say what ran)."""

    model_config = ConfigDict(extra="forbid")

    commit: str = Field(pattern=r"^[0-9a-f]{7,64}$")
    branch: str | None = Field(default=None, max_length=255)
    dirty: bool = False


class TaskSpec(BaseModel):
    """A task as submitted. Team and user are never part of it: they come from the caller's token."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    command: str = Field(min_length=1, max_length=MAX_COMMAND_CHARS, description="run by /bin/sh -c")
    name: str | None = Field(default=None, description="a short label; defaults to the command's start")
    workdir: str | None = Field(
        default=None, description="absolute folder to run in; the data folder if unset"
    )
    gpus: int = Field(default=1, strict=True, ge=0, le=MAX_GPUS_ANY_CLUSTER, description="0 = CPU only")
    gpu_memory_gb: float | None = Field(
        default=None, strict=True, gt=0, le=4096, allow_inf_nan=False, description="min free memory per GPU"
    )
    gpu_fraction: float = Field(
        default=1.0,
        gt=0,
        le=1,
        allow_inf_nan=False,
        description="share one GPU: 0.5 = half of it (tasks share a GPU while their fractions sum to at "
        "most 1 and their memory fits; without gpu_memory_gb a task holds its fraction of the GPU's memory)",
    )
    priority: Priority = "normal"
    not_before: datetime | None = Field(default=None, description="do not start before this time")
    offpeak: bool = Field(default=False, description="start only inside an off-peak window")
    deadline: datetime | None = Field(default=None, description="should finish by this time")
    time_limit_minutes: float | None = Field(default=None, gt=0, le=60 * 24 * 60, allow_inf_nan=False)
    estimated_minutes: float | None = Field(default=None, gt=0, le=60 * 24 * 60, allow_inf_nan=False)
    retries: int = Field(default=0, strict=True, ge=0, le=20)
    conda_env: str | None = None
    docker_image: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    git: GitSource | None = Field(
        default=None,
        description="the code it was submitted from: the workdir's git commit, branch and whether files "
        "differed from it (`nightshift submit` records it by itself)",
    )
    secrets: list[str] = Field(
        default_factory=list,
        max_length=32,
        description="names of the owner's secrets (`nightshift secret set NAME`) the job gets as environment "
        "variables; their values are never shown",
    )
    depends_on: list[int] = Field(default_factory=list, max_length=100)
    depends_on_any: list[int] = Field(
        default_factory=list, max_length=100, description="start once these tasks ended, however they ended"
    )
    tags: list[str] = Field(default_factory=list, max_length=32)
    resume_arg: str | None = Field(
        default=None,
        max_length=500,
        description="appended to the command on a retry when a checkpoint exists; `{latest}` is its path",
    )
    checkpoint_glob: str | None = Field(
        default=None,
        max_length=200,
        description="checkpoint files, relative to NIGHTSHIFT_CHECKPOINT_DIR (default `*`); newest wins",
    )
    stop_signal: StopSignal = Field(default="TERM", description="sent first when the job is stopped")
    grace_seconds: float | None = Field(
        default=None,
        ge=0,
        le=MAX_GRACE_SECONDS,
        allow_inf_nan=False,
        description="wait this long after stop_signal, then KILL",
    )
    node: str | None = Field(default=None, description="run only on this node (a worker's node name)")
    gpu_model: str | None = Field(
        default=None, description="run only on GPUs whose model name contains this (any case), e.g. A100"
    )
    sweep: SweepGrid | SweepList | None = Field(
        default=None,
        description="expand into one task per parameter set: a grid {name: [values]} (every combination) "
        "or a list of {name: value} sets; the command names them as {name}",
    )
    max_running: int | None = Field(
        default=None,
        strict=True,  # a number, not `true` or "4"
        ge=1,
        le=MAX_RUNNING_LIMIT,
        description="with `sweep`: run at most this many of its tasks at once (Slurm's --array=0-99%4); "
        "the others wait for a slot",
    )
    metrics_file: str | None = Field(
        default=None,
        max_length=200,
        description="the job's results (a JSON object of numbers), relative to NIGHTSHIFT_OUTPUT_DIR; "
        "default metrics.json",
    )

    @field_validator("command")
    @classmethod
    def _command_has_text(cls, value: str) -> str:
        if "\x00" in value:
            raise ValueError("command must not contain NUL bytes")
        if _BACKGROUNDED.search(value):
            raise ValueError(
                "command ends with '&': it would go to the background and the task would end at once (what "
                "it leaves running is then stopped); drop the '&', nightshift already runs it detached "
                "(to run several commands at once, end with 'wait')"
            )
        return value

    @field_validator("name")
    @classmethod
    def _name_is_short_text(cls, value: str | None) -> str | None:
        if value is not None and not _NAME.fullmatch(value):
            raise ValueError("name must be 1-120 letters, digits, spaces or . - + @ : / _")
        return value or None

    @field_validator("workdir")
    @classmethod
    def _workdir_is_absolute(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith("/"):
            raise ValueError(f"workdir must be an absolute path, got {value!r}")
        return value

    @field_validator("conda_env")
    @classmethod
    def _conda_env_name(cls, value: str | None) -> str | None:
        if value is not None and not _CONDA_ENV.fullmatch(value):
            raise ValueError(f"conda_env {value!r} is not a valid environment name")
        return value

    @field_validator("docker_image")
    @classmethod
    def _docker_image_name(cls, value: str | None) -> str | None:
        if value is not None and not _DOCKER_IMAGE.fullmatch(value):
            raise ValueError(f"docker_image {value!r} is not a valid image name (like pytorch/pytorch:2.4.0)")
        return value

    @field_validator("env", mode="before")
    @classmethod
    def _env_numbers_as_text(cls, value: Any) -> Any:
        """`env: {WORKERS: 4}` in YAML means the text "4", as docker compose reads it (booleans must be
        quoted: `true` could mean "true", "True" or "1")."""
        if not isinstance(value, dict):
            return value
        for key, item in value.items():
            if isinstance(item, bool):
                raise ValueError(f'env.{key} is a boolean: quote it ("true", "1") to say which text you mean')
        return {
            key: str(item) if isinstance(item, int | float) else item  # (booleans refused above)
            for key, item in value.items()
        }

    @field_validator("env")
    @classmethod
    def _env_names(cls, value: dict[str, str]) -> dict[str, str]:
        if len(value) > MAX_ENV_VARS:
            raise ValueError(f"env has {len(value)} variables; at most {MAX_ENV_VARS}")
        for key, item in value.items():
            _check_variable_name("env name", key)
            if len(item) > MAX_ENV_VALUE_CHARS or "\x00" in item:
                raise ValueError(
                    f"env.{key} must be at most {MAX_ENV_VALUE_CHARS} characters, without NUL bytes "
                    "(a process cannot be given one)"
                )
        return value

    @field_validator("secrets")
    @classmethod
    def _secret_names(cls, value: list[str]) -> list[str]:
        for name in value:
            check_secret_name(name)
        return list(dict.fromkeys(value))

    @field_validator("depends_on", "depends_on_any", mode="before")
    @classmethod
    def _one_id_is_a_list_of_one(cls, value: Any) -> Any:
        """`depends_on: 36` in a file means `[36]`: one parent, written as one."""
        return [value] if isinstance(value, int) and not isinstance(value, bool) else value

    @field_validator("depends_on", "depends_on_any")
    @classmethod
    def _positive_ids(cls, value: list[int], info: ValidationInfo) -> list[int]:
        for task_id in value:
            if task_id <= 0:
                raise ValueError(f"{info.field_name} holds task ids, which are positive; got {task_id}")
        return sorted(set(value))

    @field_validator("tags")
    @classmethod
    def _short_tags(cls, value: list[str]) -> list[str]:
        for tag in value:
            if not tag or len(tag) > 64:
                raise ValueError("each tag must be 1-64 characters")
        return value

    @field_validator("resume_arg")
    @classmethod
    def _resume_arg_names_latest(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if "\x00" in value or "\n" in value:
            raise ValueError("resume_arg must be one line of text")
        if LATEST_PLACEHOLDER not in value:
            raise ValueError(f"resume_arg must contain {LATEST_PLACEHOLDER} (the newest checkpoint's path)")
        return value

    @field_validator("checkpoint_glob")
    @classmethod
    def _checkpoint_glob_is_relative(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if value.startswith("/") or ".." in value.split("/") or "\x00" in value or not value:
            raise ValueError(
                f"checkpoint_glob {value!r} must be a relative pattern inside the checkpoint folder "
                "(like ckpt/*.pt), without '..'"
            )
        return value

    @field_validator("node")
    @classmethod
    def _node_name(cls, value: str | None) -> str | None:
        if value is not None and not _NODE_NAME.fullmatch(value):
            raise ValueError(
                f"node {value!r} is not a node name (letters, digits, . - _; `nightshift nodes`)"
            )
        return value or None

    @field_validator("gpu_model")
    @classmethod
    def _gpu_model_text(cls, value: str | None) -> str | None:
        if value is not None and not _GPU_MODEL.fullmatch(value):
            raise ValueError(f"gpu_model {value!r} must be 1-64 letters, digits, spaces or . - _ (like A100)")
        return value or None

    @field_validator("metrics_file")
    @classmethod
    def _metrics_file_is_relative(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not value or value.startswith("/") or ".." in value.split("/") or "\x00" in value:
            raise ValueError(
                f"metrics_file {value!r} must be a relative path inside NIGHTSHIFT_OUTPUT_DIR, without '..'"
            )
        return value

    @field_validator("sweep", mode="before")
    @classmethod
    def _sweep_shape(cls, value: Any) -> Any:
        return check_sweep_shape(value)

    @field_validator("stop_signal", mode="before")
    @classmethod
    def _signal_name(cls, value: Any) -> Any:
        if isinstance(value, str):
            return value.strip().upper().removeprefix("SIG")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> TaskSpec:
        if self.conda_env and self.docker_image:
            raise ValueError("choose conda_env or docker_image, not both")
        both = [name for name in self.secrets if name in self.env]
        if both:
            raise ValueError(f"{both[0]} is in both env and secrets: a secret's value comes from the secret")
        if self.gpus == 0 and self.gpu_memory_gb is not None:
            raise ValueError("gpu_memory_gb needs gpus of at least 1 (gpus is 0: a CPU-only task)")
        if self.gpus == 0 and self.gpu_model is not None:
            raise ValueError("gpu_model needs gpus of at least 1 (gpus is 0: a CPU-only task)")
        problem = gpu_fraction_problem(self.gpus, self.gpu_fraction)
        if problem is not None:
            raise ValueError(problem)
        if (
            self.not_before
            and self.deadline
            and _as_comparable(self.deadline) <= _as_comparable(self.not_before)
        ):
            raise ValueError("deadline must be after not_before")
        return self


def check_secret_name(name: str) -> str:
    """`name` when it can name an environment variable (the job gets the secret as one) and is none
    nightshift sets itself; else ValueError."""
    _check_variable_name("secret name", name)
    return name


def _check_variable_name(kind: str, name: str) -> None:
    """ValueError unless `name` can name an environment variable nightshift does not set itself."""
    if not _ENV_NAME.fullmatch(name) or len(name) > 128:
        raise ValueError(
            f"{kind} {name[:128]!r} must be at most 128 letters, digits and _ (not starting with a digit)"
        )
    if name.startswith(_RESERVED_ENV_PREFIX) or name in _GPU_SELECTION_ENV:
        raise ValueError(f"{kind} {name!r} is set by nightshift itself and cannot be overridden")


def _check_value(where: str, value: Any) -> None:
    if not isinstance(value, bool | int | float | str):
        raise ValueError(f"{where} must be a number, a string or true/false, got {type(value).__name__}")
    if isinstance(value, str) and (len(value) > 500 or "\x00" in value):
        raise ValueError(f"{where} must be a string of at most 500 characters")


def _check_name(name: Any) -> None:
    if not isinstance(name, str) or not _PARAM_NAME.fullmatch(name):
        raise ValueError(
            f"sweep parameter name {name!r} must be letters, digits and _ (not starting with a digit)"
        )


def _check_grid(grid: dict[Any, Any]) -> None:
    if not grid:
        raise ValueError("sweep grid is empty: give at least one parameter with a list of values")
    if len(grid) > MAX_SWEEP_PARAMS:
        raise ValueError(f"sweep has {len(grid)} parameters; at most {MAX_SWEEP_PARAMS}")
    for name, values in grid.items():
        _check_name(name)
        if not isinstance(values, list) or not values:
            raise ValueError(f"sweep parameter {name!r} needs a non-empty list of values")
        if len(values) > MAX_SWEEP_VALUES:
            raise ValueError(f"sweep parameter {name!r} has {len(values)} values; at most {MAX_SWEEP_VALUES}")
        for item in values:
            _check_value(f"sweep value of {name!r}", item)


def _check_sets(sets: list[Any]) -> None:
    if not sets:
        raise ValueError("sweep list is empty: give at least one parameter set")
    if len(sets) > MAX_SWEEP_VALUES:
        raise ValueError(f"sweep lists {len(sets)} parameter sets; at most {MAX_SWEEP_VALUES}")
    for number, item in enumerate(sets, 1):
        if not isinstance(item, dict) or not item:
            raise ValueError(f"sweep set {number} must be a non-empty mapping of name: value")
        for name, scalar in item.items():
            _check_name(name)
            _check_value(f"sweep set {number} value of {name!r}", scalar)


def check_sweep_shape(value: Any) -> Any:
    """Refuse a `sweep` that is neither a grid `{name: [values]}` nor a list of `{name: value}` sets."""
    if value is None:
        return None
    if isinstance(value, dict):
        _check_grid(value)
        return value
    if isinstance(value, list):
        _check_sets(value)
        return value
    raise ValueError(
        "sweep must be a grid {name: [values, ...]} or a list of parameter sets [{name: value}, ...], "
        f"got {type(value).__name__}"
    )


def _as_comparable(moment: datetime) -> float:
    return moment.timestamp()


def _field_path(location: tuple[int | str, ...]) -> str | None:
    parts = [str(part) for part in location if part not in ("body",)]
    return ".".join(parts) or None


IDENTITY_FIELDS = ("team", "user")


def unknown_field_message(field: str | None) -> str:
    """An unknown spec field, with the closest allowed name when it looks like a typo; `team` and `user`
    are not spec fields at all: they come from the caller's token."""
    if field in IDENTITY_FIELDS:
        return (
            f"{field!r} is not a spec field: a task's team and user are those of the API token that "
            "submits it (nightshift token create --user U --team T makes one for another person)"
        )
    close = difflib.get_close_matches(str(field), list(TaskSpec.model_fields), n=1, cutoff=0.75)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"unknown field {field!r}{hint}; allowed fields are: {', '.join(TaskSpec.model_fields)}"


# what a number field counts, for the message of a value that is no number (NaN, inf)
_UNITS = {
    "time_limit_minutes": "minutes",
    "estimated_minutes": "minutes",
    "gpu_memory_gb": "GB",
    "grace_seconds": "seconds",
    "days": "days",  # the look-back of GET /reports/utilization
    "hours": "hours",  # and of GET /reports/summary
}


def friendly_message(field: str | None, error: Mapping[str, Any]) -> str:
    """One pydantic error as a sentence a person can act on: spec files and the HTTP API word them alike.
    A value of the wrong type is quoted back (`gpus: Input should be a valid integer (got 'two')`)."""
    kind = str(error.get("type", ""))
    message = str(error.get("msg", "invalid value")).removeprefix("Value error, ")
    if kind == "string_too_short" and error.get("ctx", {}).get("min_length") == 1:
        return f"{field} must not be empty"
    if kind == "extra_forbidden":
        return unknown_field_message(field)
    if kind == "missing":
        return f"{field or 'the request body'} is required"
    if kind == "finite_number":  # NaN or inf: read as "too large" by the bound check otherwise
        return f"{field} must be a number of {_UNITS.get(str(field), 'units')} (got {error.get('input')!r})"
    if not field:
        return message
    value = error.get("input")
    quotable = isinstance(value, str | int | float | bool)
    if quotable and (kind.endswith(("_parsing", "_type", "enum")) or kind == "literal_error"):
        shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
        return f"{field}: {message} (got {shown})"
    return f"{field}: {message}"


def friendly_errors(exc: ValidationError) -> list[dict[str, Any]]:
    """Turn pydantic's errors into `{field, message}` items a person can act on."""
    items: list[dict[str, Any]] = []
    for error in exc.errors(include_url=False):
        field = _field_path(tuple(error.get("loc", ())))
        items.append({"field": field, "message": friendly_message(field, error)})
    return items


def parse_spec(data: Any) -> TaskSpec:
    """Validate a mapping into a TaskSpec, or raise SpecError listing what to fix."""
    if not isinstance(data, dict):
        raise SpecError(f"a task spec must be a JSON object / YAML mapping, got {type(data).__name__}")
    try:
        return TaskSpec.model_validate(data)
    except ValidationError as exc:
        errors = friendly_errors(exc)
        raise SpecError("; ".join(e["message"] for e in errors), errors) from None


def load_spec_file(path: Path) -> dict[str, Any]:
    """Read a YAML or JSON spec file into a mapping (validated later, after CLI overrides)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(f"cannot read spec file {path}: {exc.strerror}") from None
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        kind = "JSON" if path.suffix == ".json" else "YAML"
        raise SpecError(f"spec file {path} is not valid {kind}: {exc}") from None
    if data is None:
        raise SpecError(f"spec file {path} is empty")
    if not isinstance(data, dict):
        raise SpecError(f"spec file {path} must hold a mapping of fields, got {type(data).__name__}")
    return {str(key): _dates_as_text(value) for key, value in data.items()}


def _dates_as_text(value: Any) -> Any:
    """`value` with the dates and times YAML reads from unquoted values (`not_before: 2027-01-01T09:00`) as
    ISO 8601 text, as the API takes them (a time without an offset is in the cluster's zone)."""
    if isinstance(value, dict):
        return {key: _dates_as_text(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_dates_as_text(item) for item in value]
    if isinstance(value, date):  # a datetime is a date too
        return value.isoformat()
    return value


def gpu_fraction_problem(gpus: int, gpu_fraction: float) -> str | None:
    """What is wrong with sharing a GPU at `gpu_fraction` on `gpus` GPUs, or None: a part of a GPU is of
    one GPU (a spec's check, and GET /estimate's)."""
    if gpu_fraction < 1 and gpus != 1:
        return (
            f"gpu_fraction below 1 shares one GPU: it needs gpus 1 (you asked for {gpus}); "
            "a task on several GPUs holds them whole (gpu_fraction 1)"
        )
    return None


def spec_gpu_fraction(spec: Mapping[str, Any] | None) -> float:
    """The part of its GPU a stored spec (or a card's) holds: its `gpu_fraction`, 1 where it has none."""
    return min(float((spec or {}).get("gpu_fraction") or 1.0), 1.0)


def gpus_label(task: Mapping[str, Any]) -> str:
    """A task's GPUs for a table cell: `2`, or `0.5` for a task sharing one GPU (its spec's gpu_fraction)."""
    fraction = spec_gpu_fraction(task.get("spec"))
    gpus = int(task.get("gpus") or 0)
    return f"{fraction:g}" if gpus == 1 and fraction < 1 else str(gpus)
