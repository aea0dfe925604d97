"""Where notifications go: one `NotifyTarget` per webhook or e-mail address, chosen by user, team and event.

Set them in `nightshift.toml`:

    [[notify]]
    team = "vision"
    url = "https://open.feishu.cn/open-apis/bot/v2/hook/..."
    format = "feishu"
    events = ["failure", "quota_warning", "summary"]

or as JSON in `NIGHTSHIFT_NOTIFY`. A target with neither `user` nor `team` receives every event it lists
(an admin channel); `events` empty means every event.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, model_validator

EventKind = Literal[
    "start", "success", "failure", "requeue", "quota_warning", "idle_warning", "gpu_warning", "summary"
]
EVENT_KINDS: tuple[EventKind, ...] = (
    "start",
    "success",
    "failure",
    "requeue",
    "quota_warning",
    "idle_warning",
    "gpu_warning",
    "summary",
)
WebhookFormat = Literal["slack", "feishu", "lark", "dingtalk", "json"]


class NotifyTarget(BaseModel):
    """One destination: a webhook `url` (in `format`) or an `email` address, for some users/teams/events."""

    url: str | None = Field(default=None, description="webhook URL (http or https)")
    format: WebhookFormat = Field(default="json", description="payload shape the receiver expects")
    secret: str | None = Field(default=None, description="signing secret of a Feishu/Lark or DingTalk bot")
    email: str | None = Field(default=None, description="e-mail address (sent through the SMTP settings)")
    user: str | None = Field(default=None, description="only events about this user's tasks")
    team: str | None = Field(default=None, description="only events about this team")
    events: list[EventKind] = Field(default_factory=list, description="which events; empty = all")

    @model_validator(mode="after")
    def _one_destination(self) -> NotifyTarget:
        if (self.url is None) == (self.email is None):
            raise ValueError("a notify target needs exactly one of `url` or `email`")
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise ValueError(f"notify url {self.url!r} must start with http:// or https://")
        return self

    def wants(self, kind: str, user: str | None, team: str | None) -> bool:
        """True when an event of `kind` about `user`/`team` should go to this target."""
        if self.events and kind not in self.events:
            return False
        if self.user is not None and self.user != user:
            return False
        return not (self.team is not None and self.team != team)

    @property
    def label(self) -> str:
        """Where it goes, for logs (the webhook's host only: its path often carries a secret)."""
        if self.email is not None:
            return f"mailto:{self.email}"
        host = (self.url or "").split("://", 1)[-1].split("/", 1)[0]
        return f"{self.format}:{host}"
