"""Options several commands take alike (`submit`, `shell`, `estimate`), and the option names the CLI and
the chat's command lines share: what `--clear` calls a spec field."""

from __future__ import annotations

from typing import Annotated

import typer

GpuMemOpt = Annotated[float | None, typer.Option("--gpu-mem", help="min free GB per GPU")]
GpuFractionOpt = Annotated[
    float | None, typer.Option("--gpu-fraction", help="share one GPU: 0.5 = half of it (with --gpus 1)")
]
GpuModelOpt = Annotated[str | None, typer.Option("--gpu-model", help="only GPUs of this model")]
TagOpt = Annotated[list[str] | None, typer.Option("--tag", help="a label to find it by (repeat)")]

# `--clear NAME` (of `nightshift change` and `submit --like`): an option's name for the field it sets; a
# field may also be named as itself (`--clear time_limit_minutes`)
CLEAR_OPTIONS = {
    "after": "not_before",
    "tonight": "offpeak",
    "time-limit": "time_limit_minutes",
    "estimate": "estimated_minutes",
    "depends-on": "depends_on",
    "after-any": "depends_on_any",
}
