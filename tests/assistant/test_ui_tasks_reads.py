"""The tasks table of one page: events run side by side, so a read begun before a hold but answered after it
must not put back the table (and note) from before the hold, and one begun after it keeps what the hold
said for a while."""

from __future__ import annotations

import threading

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


def test_what_a_click_on_a_task_said_outlasts_the_refreshes_that_come_by_themselves() -> None:
    # the tab's or the sign-in's refresh, however late it answers (a loaded machine), would otherwise replace
    # "Task 5 is held"; a refresh the person asks for says the count again
    session = _session()
    assert session.recent_action_note() is None
    session.note_action("Task 5 is held: it starts only after you release it.")

    assert session.recent_action_note() == "Task 5 is held: it starts only after you release it."
    session.forget_action_note()  # Refresh, or another status
    assert session.recent_action_note() is None
    session.close()


def test_the_tasks_table_is_read_while_a_chat_reply_streams() -> None:
    # a chat turn holds the session's lock while its reply streams (an LLM's can take a while)
    session = _session()
    done = threading.Event()

    def refresh() -> None:
        session.may_show_tasks_read(session.begin_tasks_read())
        session.recent_action_note()
        done.set()

    with session.lock:
        threading.Thread(target=refresh, daemon=True).start()
        assert done.wait(5), "the Tasks tab waited for the chat reply"
    session.close()
