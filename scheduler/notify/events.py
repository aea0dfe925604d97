"""What a notification says: one `Event` (kind, who it is about, a title, lines of text, facts)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from scheduler.notify.config import EventKind


@dataclass(frozen=True)
class Event:
    """Something a person wants to hear about; `user`/`team` route it, `fields` carry the facts."""

    kind: EventKind
    title: str
    text: str = ""
    user: str | None = None
    team: str | None = None
    task_id: int | None = None
    fields: dict[str, Any] = field(default_factory=dict)
    log_tail: list[str] = field(default_factory=list)
    at_s: float = 0.0

    def body(self) -> str:
        """The plain-text body: the text, the facts one per line, then the last log lines."""
        lines = [self.text] if self.text else []
        lines += [f"{key}: {value}" for key, value in self.fields.items() if value is not None]
        if self.log_tail:
            lines.append("last log lines:")
            lines += [f"  {line}" for line in self.log_tail]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping (the `json` webhook format sends exactly this)."""
        return {
            "event": self.kind,
            "title": self.title,
            "text": self.text,
            "user": self.user,
            "team": self.team,
            "task_id": self.task_id,
            "fields": self.fields,
            "log_tail": self.log_tail,
            "at_s": self.at_s,
        }
