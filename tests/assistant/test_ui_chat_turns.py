"""A page's chat messages are answered in the order the page numbered them, whichever reaches the server
first; a number the page never sent holds up the next ones only for a while."""

from __future__ import annotations

import threading

from assistant.ui.chat_turns import ChatTurns

WAIT_S = 30.0  # generous bound for what must happen; nothing here asserts how fast


def _answer(
    turns: ChatTurns, number: int | None, answered: list[int | None], entered: threading.Event
) -> None:
    with turns.turn(number):
        entered.set()
        answered.append(number)


def _start(turns: ChatTurns, number: int | None, answered: list[int | None]) -> threading.Event:
    entered = threading.Event()
    threading.Thread(target=_answer, args=(turns, number, answered, entered), daemon=True).start()
    return entered


def test_a_second_message_that_reaches_the_server_first_waits_for_the_first() -> None:
    turns, answered = ChatTurns(late_message_wait_s=WAIT_S), []
    second = _start(turns, 2, answered)
    assert not second.wait(0.5)  # it is held back: message 1 is still on its way
    first = _start(turns, 1, answered)
    assert first.wait(WAIT_S) and second.wait(WAIT_S)
    assert answered == [1, 2]


def test_a_message_waits_while_the_one_before_it_is_being_answered() -> None:
    turns, answered = ChatTurns(late_message_wait_s=0.1), []
    release_first, first_in = threading.Event(), threading.Event()

    def first_reply() -> None:
        with turns.turn(1):
            first_in.set()
            release_first.wait(WAIT_S)  # a long reply, streaming past the late-message wait
            answered.append(1)

    threading.Thread(target=first_reply, daemon=True).start()
    assert first_in.wait(WAIT_S)
    second = _start(turns, 2, answered)
    assert not second.wait(0.5)  # well past 0.1 s: the first is here, so the second waits for it
    release_first.set()
    assert second.wait(WAIT_S)
    assert answered == [1, 2]


def test_a_number_never_sent_holds_up_the_next_only_for_the_late_message_wait() -> None:
    turns, answered = ChatTurns(late_message_wait_s=0.2), []
    assert _start(turns, 3, answered).wait(WAIT_S)  # 1 and 2 never came
    assert _start(turns, 4, answered).wait(WAIT_S)
    late = _start(turns, 2, answered)  # a skipped number that comes after all goes at once
    assert late.wait(WAIT_S)
    assert answered == [3, 4, 2]


def test_messages_in_order_and_unnumbered_ones_go_at_once() -> None:
    turns, answered = ChatTurns(late_message_wait_s=WAIT_S), []
    for number in (1, 2, None, 3):
        assert _start(turns, number, answered).wait(WAIT_S)
    assert answered == [1, 2, None, 3]


def test_a_reply_that_fails_still_passes_the_turn_on() -> None:
    turns, answered = ChatTurns(late_message_wait_s=WAIT_S), []
    try:
        with turns.turn(1):
            raise RuntimeError("the model failed")
    except RuntimeError:
        pass
    assert _start(turns, 2, answered).wait(WAIT_S)
    assert answered == [2]
