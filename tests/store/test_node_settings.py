"""What admins set on a node, kept in SQL (SQLite and PostgreSQL): the last save of each node wins, and two
saves at once are written one after the other, each as its read gives it."""

from __future__ import annotations

import threading

from scheduler.store.node_settings import NodeSettingsStore


def test_each_node_keeps_its_last_saved_fields_and_a_node_gone_from_redis_is_not_saved(store):
    settings = NodeSettingsStore(store.factory)

    settings.save("box-1", lambda: {"drained": "1"})
    settings.save("box-2", lambda: {"drain_at_ms": "1000", "reservations": '[["vision", 1, 2]]'})
    settings.save("box-1", lambda: {"drained": "0"})
    settings.save("box-3", lambda: None)

    assert settings.all() == {
        "box-1": {"drained": "0"},
        "box-2": {"drain_at_ms": "1000", "reservations": '[["vision", 1, 2]]'},
    }


def test_two_saves_of_one_node_at_once_are_written_in_the_order_they_read(store):
    settings = NodeSettingsStore(store.factory)
    settings.save("box-1", lambda: {"drained": "0"})
    first_reading = threading.Event()
    reads: list[str] = []

    def slow_read() -> dict[str, str]:  # reads Redis, then is slow to finish: the other save must wait
        reads.append("first")
        first_reading.set()
        threading.Event().wait(0.3)
        return {"drained": "1"}

    def second_read() -> dict[str, str]:
        reads.append("second")
        return {"drained": "1", "drain_at_ms": "5"}

    first = threading.Thread(target=settings.save, args=("box-1", slow_read))
    first.start()
    first_reading.wait(5)
    settings.save("box-1", second_read)
    first.join(5)

    # the second save waited for the first one's row: its read, the newer, is what stays
    assert reads == ["first", "second"]
    assert settings.all()["box-1"] == {"drained": "1", "drain_at_ms": "5"}
