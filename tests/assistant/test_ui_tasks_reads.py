"""The tasks table of one page: events run side by side, so a read begun before a hold but answered after it
must not put back the table (and note) from before the hold."""

from __future__ import annotations

from assistant.client import AssistantClient
from assistant.ui.session import UiSession
from scheduler.settings import Settings


def _session() -> UiSession:
    return UiSession(Settings(), AssistantClient("http://127.0.0.1:9", "token"), "erin", "vision", False)


def test_a_read_begun_before_one_already_shown_is_not_shown() -> None:
    session = _session()
    refresh = session.begin_tasks_read()  # the refresh after sign-in begins...
    after_hold = session.begin_tasks_read()  # ...then the hold's read begins, and answers first

    assert session.may_show_tasks_read(after_hold)
    assert not session.may_show_tasks_read(refresh)  # the older answer, come late, is dropped
    assert session.may_show_tasks_read(session.begin_tasks_read())  # a newer read shows again
    session.close()


def test_reads_answered_in_order_are_all_shown() -> None:
    session = _session()
    for _ in range(3):
        assert session.may_show_tasks_read(session.begin_tasks_read())
    session.close()
