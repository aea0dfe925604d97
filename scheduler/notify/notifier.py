"""Delivery in the background: a queue, one thread, retries with exponential backoff.

`Notifier.notify(event)` only puts deliveries on a bounded queue and returns: the scheduler and the worker
never wait on a slow or dead receiver. One daemon thread sends them in order of due time; a failed one is
tried again after `backoff_s`, `2 * backoff_s`, `4 * backoff_s`, ... up to `retries` more times, then
dropped with a warning. A full queue drops the newest message (logged) rather than grow without bound.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import httpx

from scheduler.notify.channels import DeliveryError, SmtpConfig, send_email, send_webhook
from scheduler.notify.config import NotifyTarget
from scheduler.notify.events import Event
from scheduler.settings import Settings

log = logging.getLogger(__name__)
MAX_QUEUED = 1000


@dataclass(order=True)
class _Delivery:
    due: float
    seq: int
    target: NotifyTarget = field(compare=False)
    event: Event = field(compare=False)
    attempt: int = field(default=0, compare=False)


@dataclass
class NotifierStats:
    """Counts since start: delivered, retried (failed tries tried again), dropped (gave up, queue full)."""

    delivered: int = 0
    retried: int = 0
    dropped: int = 0
    last_error: str | None = None


class Notifier:
    """Routes events to the targets that want them and delivers them from a background thread."""

    def __init__(
        self,
        targets: Sequence[NotifyTarget],
        smtp: SmtpConfig | None = None,
        *,
        retries: int = 5,
        backoff_s: float = 2.0,
        timeout_s: float = 10.0,
    ) -> None:
        self.targets = list(targets)
        self.smtp = smtp
        self.retries = retries
        self.backoff_s = backoff_s
        self.stats = NotifierStats()
        self._client = httpx.Client(timeout=timeout_s)
        self._heap: list[_Delivery] = []
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._busy = 0
        self._closing = False
        self._thread: threading.Thread | None = None

    @classmethod
    def from_settings(cls, settings: Settings) -> Notifier:
        """A notifier for the configured targets and SMTP server."""
        smtp = None
        if settings.smtp_host:
            smtp = SmtpConfig(
                settings.smtp_host, settings.smtp_port, settings.smtp_user, settings.smtp_password,
                settings.smtp_starttls, settings.smtp_from,
            )  # fmt: skip
        return cls(
            settings.notify, smtp, retries=settings.notify_retries, backoff_s=settings.notify_backoff_s
        )

    def start(self) -> Notifier:
        """Start the delivery thread (once); returns self."""
        with self._cond:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="notifier", daemon=True)
                self._thread.start()
        return self

    def notify(self, event: Event) -> int:
        """Queue `event` for every target that wants it; never blocks. Returns how many were queued."""
        if event.at_s == 0.0:
            event = Event(**{**event.__dict__, "at_s": time.time()})
        wanted = [t for t in self.targets if t.wants(event.kind, event.user, event.team)]
        queued = 0
        with self._cond:
            for target in wanted:
                if len(self._heap) >= MAX_QUEUED:
                    self.stats.dropped += 1
                    log.warning("notification queue full: dropped %r to %s", event.title, target.label)
                    continue
                heapq.heappush(self._heap, _Delivery(time.monotonic(), next(self._seq), target, event))
                queued += 1
            self._cond.notify_all()
        if queued:
            self.start()
        return queued

    def flush(self, timeout_s: float = 30.0) -> bool:
        """Wait until every queued delivery is done (sent or given up); False if `timeout_s` passed first."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while self._heap or self._busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, 0.1))
        return True

    def close(self, timeout_s: float = 5.0) -> None:
        """Try to deliver what is due within `timeout_s`, then stop the thread and close connections."""
        self.flush(timeout_s)
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=timeout_s)
        self._client.close()

    def _next(self) -> _Delivery | None:
        with self._cond:
            while not self._closing:
                if not self._heap:
                    self._cond.wait()
                    continue
                wait_s = self._heap[0].due - time.monotonic()
                if wait_s > 0:
                    self._cond.wait(wait_s)
                    continue
                self._busy += 1
                return heapq.heappop(self._heap)
            return None

    def _run(self) -> None:
        while (delivery := self._next()) is not None:
            try:
                self._send(delivery)
            finally:
                with self._cond:
                    self._busy -= 1
                    self._cond.notify_all()

    def _send(self, delivery: _Delivery) -> None:
        target, event = delivery.target, delivery.event
        try:
            if target.email is not None:
                send_email(self.smtp, target, event)
            else:
                send_webhook(self._client, target, event, time.time())
        except DeliveryError as exc:
            self.stats.last_error = str(exc)
            if delivery.attempt >= self.retries:
                self.stats.dropped += 1
                log.warning("gave up notifying %s of %r: %s", target.label, event.title, exc)
                return
            self.stats.retried += 1
            delay_s = self.backoff_s * 2**delivery.attempt
            log.info("notifying %s failed (%s); retry in %.1f s", target.label, exc, delay_s)
            with self._cond:
                heapq.heappush(
                    self._heap,
                    _Delivery(
                        time.monotonic() + delay_s, next(self._seq), target, event, delivery.attempt + 1
                    ),
                )
                self._cond.notify_all()
            return
        except Exception:  # a bug in one delivery must not kill the thread
            self.stats.dropped += 1
            log.exception("notifying %s of %r failed", target.label, event.title)
            return
        self.stats.delivered += 1
