"""Fetchers: one per queue a pull consumer is assigned, supervised and registered by queue.

A :class:`Fetcher` long-polls its queue into a buffer of at most ``max_buffered`` records and
keeps the queue's *position*: the offset of the next record the user gets. ``seek`` moves both
(the pull in flight is cancelled and what it brings is dropped). A pull that fails with a
client or broker error is retried after a back-off; an unexpected error restarts the fetcher
(the same one: buffer and position kept).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

import anyio
from anyio.abc import TaskStatus

from rocketmq_actors.consumer.core.brokercalls import PullCounter, Puller, PullResult, PullStatus
from rocketmq_actors.consumer.core.message import RecordDeserializationError, deserialize_record
from rocketmq_actors.consumer.core.queues import QueueTable
from rocketmq_actors.logs import get_logger
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.records import MessageExt
from rocketmq_actors.runtime.signal import Signal
from rocketmq_actors.runtime.tree import Node

__all__ = [
    "FetchOwner", "Fetcher", "RecordBuffer", "deserialize_taken", "put_back", "take_records",
]  # fmt: skip

log = get_logger("rocketmq_actors.consumer")

#: after a failed pull, a pull consumer's (Java's DefaultLitePullConsumerImpl
#: PULL_TIME_DELAY_MILLS_ON_EXCEPTION)
FETCH_ERROR_DELAY = 3.0


class RecordBuffer:
    """The signals between a pull consumer's fetchers, which buffer records, and its reader
    (``getmany``), which takes them: records arrived, space was freed."""

    def __init__(self) -> None:
        self._arrived = anyio.Event()
        self._space = Signal()

    def arrived(self) -> None:
        self._arrived.set()

    def freed(self) -> None:
        """Records were taken, dropped by a seek, or a queue resumed: fetchers may go on."""
        self._space.set()

    async def wait_space(self) -> None:
        await self._space.wait()

    async def take(
        self, fetchers: QueueTable[Fetcher], queues: Sequence[MessageQueue], limit: int,
        timeout: float,
    ) -> dict[MessageQueue, list[MessageExt]]:  # fmt: skip
        """Up to ``limit`` records of ``queues`` (:func:`take_records`), waiting up to
        ``timeout`` for the first; an empty dict when none came."""
        with anyio.move_on_after(timeout):
            while True:
                out = take_records(fetchers, queues or list(fetchers), limit)
                if out:
                    self._space.set()
                    return out
                if self._arrived.is_set():
                    self._arrived = anyio.Event()
                    continue
                await self._arrived.wait()
        return {}


class FetchOwner(Puller, Protocol):
    max_buffered: int
    buffer: RecordBuffer


class Fetcher:
    def __init__(
        self, owner: FetchOwner, queue: MessageQueue, offset: int, *, paused: bool
    ) -> None:
        self.owner = owner
        self._queue = queue
        self.position = offset
        self.fetch_offset = offset
        self.records: deque[MessageExt] = deque()
        self.paused = paused
        self._generation = 0  # bumped by seek: a pull of an older generation is dropped
        self._pull_scope: anyio.CancelScope | None = None
        self._pulls = PullCounter(FETCH_ERROR_DELAY)

    @property
    def queue(self) -> MessageQueue:
        return self._queue

    def seek(self, offset: int) -> None:
        """Continue at ``offset``: buffered records are dropped, the pull in flight too."""
        self._generation += 1
        self.records.clear()
        self.position = self.fetch_offset = offset
        if self._pull_scope is not None:
            self._pull_scope.cancel()

    async def run(self, *, task_status: TaskStatus[Fetcher]) -> None:
        task_status.started(self)
        owner = self.owner
        while True:
            if self.paused or len(self.records) >= owner.max_buffered:
                await owner.buffer.wait_space()
                continue
            generation = self._generation
            with anyio.CancelScope() as self._pull_scope:
                result = await self._pull()
            self._pull_scope = None
            if result is None or generation != self._generation:
                continue
            self._take(result)

    async def _pull(self) -> PullResult | None:
        return await self._pulls.pull(self.owner, self.queue, self.fetch_offset)

    def _take(self, result: PullResult) -> None:
        if result.status is PullStatus.OFFSET_ILLEGAL:
            log.warning("consumer.offset_moved", queue=str(self.queue),
                        offset=self.fetch_offset, next=result.next_offset)  # fmt: skip
            self.records.clear()
            self.position = result.next_offset
        self.fetch_offset = result.next_offset
        if result.messages:
            self.records.extend(result.messages)
            self.owner.buffer.arrived()
        elif not self.records:  # all given out, or filtered away: move past them
            self.position = max(self.position, self.fetch_offset)

    def describe(self) -> Node:
        info: dict[str, object] = {"position": self.position, "buffered": len(self.records)}
        if self.paused:
            info["paused"] = True
        if self._pulls.errors:
            info["pull_errors"] = self._pulls.errors
        q = self.queue
        return Node(name=f"fetcher[{q.topic}@{q.broker_name}:{q.queue_id}]", kind="fetcher",
                    info=info)  # fmt: skip


def take_records(
    fetchers: QueueTable[Fetcher], queues: Sequence[MessageQueue], limit: int
) -> dict[MessageQueue, list[MessageExt]]:
    """Up to ``limit`` buffered records of ``queues``, round robin over them (one busy queue
    does not starve the rest); each queue's position moves past what it gives."""
    out: dict[MessageQueue, list[MessageExt]] = {}
    pending = [f for q in queues if (f := fetchers.lookup(q)) and f.records and not f.paused]
    while limit > 0 and pending:  # round robin: one busy queue does not starve the rest
        share = max(1, limit // len(pending))
        for fetch in list(pending):
            got = [fetch.records.popleft() for _ in range(min(share, len(fetch.records), limit))]
            if got:
                out.setdefault(fetch.queue, []).extend(got)
                limit -= len(got)
                fetch.position = got[-1].queue_offset + 1
            if not fetch.records:
                fetch.position = max(fetch.position, fetch.fetch_offset)
                pending.remove(fetch)
            if limit <= 0:
                break
    return out


def deserialize_taken(
    fetchers: QueueTable[Fetcher], taken: dict[MessageQueue, list[MessageExt]],
    deserializer: Callable[[bytes], object], app: Callable[[MessageQueue], MessageQueue],
) -> dict[MessageQueue, list[MessageExt]]:  # fmt: skip
    """Deserialize what :func:`take_records` took. At the first record the deserializer
    rejects, that record and every one after it are put back (Kafka's poll: the records before
    it are returned; the next call raises): :class:`RecordDeserializationError` when there is
    nothing before it."""
    good: dict[MessageQueue, list[MessageExt]] = {}
    items = list(taken.items())
    for n, (queue, records) in enumerate(items):
        for i, record in enumerate(records):
            try:
                deserialize_record(record, deserializer, app(queue))
            except RecordDeserializationError:
                put_back(fetchers, {queue: records[i:], **dict(items[n + 1 :])})
                if i:
                    good[queue] = records[:i]
                if not good:
                    raise
                return good
        good[queue] = records
    return good


def put_back(fetchers: QueueTable[Fetcher], taken: Mapping[MessageQueue, list[MessageExt]]) -> None:
    """Undo :func:`take_records`: the records go back to the front of their buffers, the
    positions back to the first of them."""
    for queue, records in taken.items():
        fetch = fetchers.lookup(queue)
        if fetch is not None and records:
            fetch.records.extendleft(reversed(records))
            fetch.position = records[0].queue_offset
