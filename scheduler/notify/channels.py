"""One message out: a webhook POST (httpx) or an e-mail (smtplib); each raises DeliveryError on failure."""

from __future__ import annotations

import smtplib
from dataclasses import dataclass
from email.message import EmailMessage
from typing import Any

import httpx

from scheduler.notify.config import NotifyTarget
from scheduler.notify.events import Event
from scheduler.notify.formats import accepted, payload, signed_url


class DeliveryError(Exception):
    """Raised when a receiver could not be reached or refused a message (the notifier retries it)."""


@dataclass(frozen=True, slots=True)
class SmtpConfig:
    """How to reach the mail server."""

    host: str
    port: int = 25
    user: str | None = None
    password: str | None = None
    starttls: bool = False
    sender: str = "nightshift@localhost"
    timeout_s: float = 10.0


def send_webhook(client: httpx.Client, target: NotifyTarget, event: Event, now_s: float) -> None:
    """POST `event` to the target's URL in its format; raises DeliveryError unless the receiver took it."""
    assert target.url is not None
    url = signed_url(target.url, target.format, target.secret, now_s)
    try:
        response = client.post(url, json=payload(event, target.format, target.secret, now_s))
    except httpx.HTTPError as exc:
        raise DeliveryError(f"{target.label}: {type(exc).__name__}: {exc}") from exc
    body: Any = None
    if response.headers.get("content-type", "").startswith("application/json"):
        try:
            body = response.json()
        except ValueError:
            body = None
    if not accepted(target.format, response.status_code, body):
        raise DeliveryError(f"{target.label}: answered {response.status_code} {response.text[:200]!r}")


def send_email(smtp: SmtpConfig | None, target: NotifyTarget, event: Event) -> None:
    """Send `event` as a plain-text e-mail to the target's address; raises DeliveryError on failure."""
    if smtp is None:
        raise DeliveryError(f"{target.label}: no SMTP server configured (set NIGHTSHIFT_SMTP_HOST)")
    assert target.email is not None
    message = EmailMessage()
    message["Subject"] = f"[nightshift] {event.title}"
    message["From"] = smtp.sender
    message["To"] = target.email
    message.set_content(event.body() or event.title)
    try:
        with smtplib.SMTP(smtp.host, smtp.port, timeout=smtp.timeout_s) as server:
            if smtp.starttls:
                server.starttls()
            if smtp.user:
                server.login(smtp.user, smtp.password or "")
            server.send_message(message)
    except (OSError, smtplib.SMTPException) as exc:
        raise DeliveryError(f"{target.label}: {type(exc).__name__}: {exc}") from exc
