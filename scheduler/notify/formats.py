"""Webhook payloads in the shapes Slack, Feishu/Lark, DingTalk and plain JSON receivers expect.

Feishu/Lark and DingTalk bots may require a signature: Feishu puts `timestamp` and `sign` in the body
(HMAC-SHA256 keyed by "timestamp\\nsecret" over nothing), DingTalk in the URL query (HMAC-SHA256 keyed by the
secret over "timestamp_ms\\nsecret"). Both answer HTTP 200 even on failure, with an error code in the body;
`accepted` reads it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from typing import Any
from urllib.parse import quote_plus

from scheduler.notify.config import WebhookFormat
from scheduler.notify.events import Event

EMOJI = {
    "start": ":rocket:",
    "success": ":white_check_mark:",
    "failure": ":x:",
    "requeue": ":leftwards_arrow_with_hook:",
    "quota_warning": ":warning:",
    "idle_warning": ":zzz:",
    "gpu_warning": ":fire:",
    "summary": ":sunrise:",
}


def payload(
    event: Event, fmt: WebhookFormat, secret: str | None = None, now_s: float = 0.0
) -> dict[str, Any]:
    """The JSON body to POST for `event` in format `fmt` (signed with `secret` where the format signs)."""
    body = event.body()
    if fmt == "slack":
        text = f"{EMOJI.get(event.kind, '')} *{event.title}*\n{body}".strip()
        return {
            "text": f"{event.title}\n{body}".strip(),
            "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": text}}],
        }
    if fmt in ("feishu", "lark"):
        data: dict[str, Any] = {"msg_type": "text", "content": {"text": f"{event.title}\n{body}".strip()}}
        if secret:
            timestamp = str(int(now_s))
            data["timestamp"] = timestamp
            data["sign"] = _sign(f"{timestamp}\n{secret}", b"")
        return data
    if fmt == "dingtalk":
        markdown = f"### {event.title}\n\n" + "\n\n".join(line for line in body.split("\n"))
        return {"msgtype": "markdown", "markdown": {"title": event.title, "text": markdown}}
    return event.to_dict()


def signed_url(url: str, fmt: WebhookFormat, secret: str | None, now_s: float) -> str:
    """The URL to POST to: DingTalk's signed bots take `timestamp` and `sign` in the query."""
    if fmt != "dingtalk" or not secret:
        return url
    timestamp = str(int(now_s * 1000))
    sign = _sign(secret, f"{timestamp}\n{secret}".encode())
    joiner = "&" if "?" in url else "?"
    return f"{url}{joiner}timestamp={timestamp}&sign={quote_plus(sign)}"


def accepted(fmt: WebhookFormat, status_code: int, body: Any) -> bool:
    """Whether the receiver took the message: a 2xx answer, and no error code in Feishu/DingTalk bodies."""
    if not 200 <= status_code < 300:
        return False
    if not isinstance(body, dict):
        return True
    if fmt in ("feishu", "lark"):
        return int(body.get("code", body.get("StatusCode", 0)) or 0) == 0
    if fmt == "dingtalk":
        return int(body.get("errcode", 0) or 0) == 0
    return True


def _sign(key: str, message: bytes) -> str:
    digest = hmac.new(key.encode(), message, hashlib.sha256).digest()
    return base64.b64encode(digest).decode()
