"""Chat messages of one browser page, answered in the order the browser sent them.

Gradio runs each message's reply in its own worker thread, so two messages sent a moment apart race for the
session: under load the second could be answered first. The page numbers its messages as it sends them
(`app.build_ui`'s js step); a message waits here until every lower number has been answered.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

# How long a message waits for a lower-numbered one that has not reached the server: a message the page
# numbered and then never sent (a failed request) must not hold up every later one.
LATE_MESSAGE_WAIT_S = 10.0


class ChatTurns:
    """Numbered chat messages of one page take their turns in number order (1, 2, 3, ...)."""

    def __init__(self, late_message_wait_s: float = LATE_MESSAGE_WAIT_S) -> None:
        self._late_wait_s = late_message_wait_s
        self._changed = threading.Condition()
        self._next = 1  # the number whose turn it is
        self._arrived: set[int] = set()  # numbers waiting here or answering now

    @contextmanager
    def turn(self, number: int | None) -> Iterator[None]:
        """Wait until message `number` is the next to answer, then hold the turn until the block ends.

        A number already passed over (it came later than `LATE_MESSAGE_WAIT_S`), or none (a caller that does
        not number its messages), goes at once."""
        if number is None:
            yield
            return
        with self._changed:
            self._arrived.add(number)
            self._wait_for_earlier(number)
        try:
            yield
        finally:
            with self._changed:
                self._arrived.discard(number)
                self._next = max(self._next, number + 1)
                self._changed.notify_all()

    def _wait_for_earlier(self, number: int) -> None:
        """Block (holding the condition) while a lower number is answering or may still arrive."""
        deadline = time.monotonic() + self._late_wait_s
        while number > self._next:
            if self._next in self._arrived:  # the one before is here: wait for its answer, however long
                self._changed.wait()
                deadline = time.monotonic() + self._late_wait_s
                continue
            left = deadline - time.monotonic()
            if left <= 0:  # the next number never came: skip it
                self._next += 1
                continue
            self._changed.wait(left)
