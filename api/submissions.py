"""Group commit of single submissions: the POST /api/v1/tasks that arrive together share one write.

Each request still validates, authenticates and is checked against the cluster on its own; what is
shared is the expensive part: one worker-thread hop, one SQL transaction and one Redis round trip for all
the submissions that queued up while the previous group was being written (`Cluster.submit_many`). At low
load a group is one submission, so nothing waits for a group to fill. A submission with an
`Idempotency-Key` takes the single path (`Cluster.submit`), which looks the key up first.
"""

from __future__ import annotations

import asyncio

from starlette.concurrency import run_in_threadpool

from scheduler.service import Cluster
from scheduler.spec import TaskSpec
from scheduler.store.identity import Identity
from scheduler.store.tables import Task

MAX_GROUP = 256  # submissions written in one transaction at most


class SubmissionQueue:
    """Coalesces concurrent submissions of one API process into `Cluster.submit_many` calls."""

    def __init__(self, cluster: Cluster, max_group: int = MAX_GROUP) -> None:
        self.cluster = cluster
        self.max_group = max_group
        self._pending: list[tuple[Identity, TaskSpec, asyncio.Future[Task]]] = []
        self._drainer: asyncio.Task[None] | None = None

    async def submit(
        self, who: Identity, spec: TaskSpec, idempotency_key: str | None = None
    ) -> tuple[Task, bool]:
        """Store and enqueue one task; returns (task, created), like `Cluster.submit`."""
        if idempotency_key:
            return await run_in_threadpool(self.cluster.submit, who, spec, idempotency_key)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Task] = loop.create_future()
        self._pending.append((who, spec, future))
        drainer = self._drainer
        if drainer is None or drainer.done() or drainer.get_loop() is not loop:  # (a test's new loop)
            self._drainer = loop.create_task(self._drain())
        return await future, True

    async def _drain(self) -> None:
        """Write the waiting submissions group by group until none is left."""
        while self._pending:
            group, self._pending = self._pending[: self.max_group], self._pending[self.max_group :]
            try:
                results = await run_in_threadpool(
                    self.cluster.submit_many, [(who, spec) for who, spec, _ in group]
                )
            except BaseException as exc:  # cancelled (shutdown) or a bug: no caller is left hanging
                for _, _, future in group:
                    if not future.done():
                        future.set_exception(exc if isinstance(exc, Exception) else RuntimeError(str(exc)))
                raise
            for (_, _, future), result in zip(group, results, strict=True):
                if future.done():  # its caller went away; the task exists all the same
                    continue
                if isinstance(result, Exception):
                    future.set_exception(result)
                else:
                    future.set_result(result)
