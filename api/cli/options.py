"""Option names the CLI and the chat's command lines share: what `--clear` calls a spec field."""

from __future__ import annotations

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
