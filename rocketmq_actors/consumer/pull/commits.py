"""A pull consumer's commits: positions recorded into its offset store and persisted (to the
brokers; broadcasting, to a local file), on ``commit()``, by the auto-commit actor every
``interval``, and before queues are revoked or the consumer closes."""

from __future__ import annotations

from collections.abc import Mapping

import anyio
from anyio.abc import TaskStatus

from rocketmq_actors.consumer.core.offsets import OffsetStore
from rocketmq_actors.consumer.core.queues import QueueTable
from rocketmq_actors.consumer.pull.fetcher import Fetcher
from rocketmq_actors.errors import ConfigError
from rocketmq_actors.protocol.bodies import MessageQueue

__all__ = ["Committer"]


class Committer:
    def __init__(
        self, fetchers: QueueTable[Fetcher], offsets: OffsetStore, *, interval: float
    ) -> None:
        self.fetchers = fetchers
        self.offsets = offsets
        self.interval = interval

    def record_positions(self) -> None:
        """Every assigned queue's position into the store (persisted later)."""
        for fetcher in self.fetchers.actors():
            self.offsets.update(fetcher.queue, fetcher.position)

    async def commit(self, offsets: Mapping[MessageQueue, int] | None = None) -> None:
        """Commit ``offsets`` (next offset to consume, by queue), or the current position of
        every assigned queue; returns once the brokers have them."""
        if offsets is None:
            self.record_positions()
            targets = list(self.fetchers)
        else:
            for queue, offset in offsets.items():
                if offset < 0:
                    raise ConfigError(f"offset for {queue} must be >= 0")
                self.offsets.update(queue, offset, increase_only=False)
            targets = list(offsets)
        await self.offsets.persist(targets, confirmed=True)

    async def committed(self, queue: MessageQueue) -> int | None:
        """The group's committed offset for ``queue``: in memory, else from the broker."""
        offset = self.offsets.read(queue)  # 0 is an offset: no truthiness test here
        return offset if offset is not None else await self.offsets.fetch(queue)

    async def run(self, *, task_status: TaskStatus[None]) -> None:
        """The auto-commit actor."""
        task_status.started()
        while True:
            await anyio.sleep(self.interval)
            self.record_positions()
            await self.offsets.persist(list(self.fetchers))
