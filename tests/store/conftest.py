"""Fixtures of the store tests: a RedisQueue on the test Redis, a migrated database on SQLite or PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from scheduler.store.db import create_db_engine, make_session_factory, migrate
from scheduler.store.identity import Identity, authenticate, create_token
from scheduler.store.queue import RedisQueue
from scheduler.store.tasks import NewTask, TaskStore

NODE = "node-a"


@pytest.fixture
def queue(redis_url: str) -> Iterator[RedisQueue]:
    """The queue on the (flushed) test Redis, with an epoch as a rebuilt cluster has."""
    opened = RedisQueue.from_url(redis_url)
    opened.start_epoch()
    yield opened
    opened.client.close()


def fill_inbox(queue: RedisQueue, task_ids: range | list[int], node: str = NODE, now_ms: int = 0) -> None:
    """Enqueue these tasks and assign each to `node` (one GPU each, round robin over 4)."""
    for task_id in task_ids:
        queue.enqueue(task_id, float(task_id))
    for task_id in task_ids:
        assert queue.assign(task_id, node, [task_id % 4], now_ms)


@dataclass
class Store:
    """A migrated database with its task store and a way to make callers."""

    engine: Engine
    factory: sessionmaker[Session]
    tasks: TaskStore

    def identity(self, user: str = "alice", team: str = "vision", admin: bool = False) -> Identity:
        return authenticate(self.factory, create_token(self.factory, user=user, team=team, is_admin=admin))


@pytest.fixture
def store(database_url: str) -> Iterator[Store]:
    """A freshly migrated database (SQLite in the temp dir, or a reset PostgreSQL schema)."""
    engine = create_db_engine(database_url)
    migrate(engine)
    factory = make_session_factory(engine)
    yield Store(engine, factory, TaskStore(factory))
    engine.dispose()


def new_task(command: str = "echo hi", priority: str = "normal", gpus: int = 1) -> NewTask:
    """A resolved spec, as `scheduler.submission.resolve` would make it."""
    return NewTask(
        name=command.split()[0],
        command=command,
        spec={"command": command, "gpus": gpus, "priority": priority},
        priority=priority,
        gpus=gpus,
        gpu_memory_gb=None,
        retries=0,
    )
