"""The client-side state of one owned queue: messages pulled but not yet consumed.

The offset to commit is the smallest offset still cached (a message still being consumed holds
the queue back), or one past the highest offset ever cached when nothing is left. Flow control
reads the cached count, bytes and span (highest - lowest cached offset).

Orderly consumption takes messages out in offset order (:meth:`take`), and either commits them
(:meth:`commit_taken`) or puts them back to be consumed again first (:meth:`rollback_taken`);
``locked``/``lock_time`` mirror the broker-side lock, and ``consume_lock`` is held while a
handler runs so that a release waits for it.
"""

from __future__ import annotations

import bisect
import time

import anyio

from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.records import MessageExt

__all__ = ["ProcessQueue"]


class ProcessQueue:
    def __init__(self, queue: MessageQueue, next_offset: int) -> None:
        self.queue = queue
        self.next_offset = next_offset  # where the next pull starts
        self.dropped = False
        self.release_deferred = False  # orderly: dropped, kept until its handler ends
        self.last_pull = time.monotonic()
        self.last_consume = 0.0
        self.locked = False
        self.lock_time = 0.0
        self.consume_lock = anyio.Lock()
        self._offsets: list[int] = []  # sorted offsets of cached messages not taken
        self._messages: dict[int, MessageExt] = {}
        self._taken: list[MessageExt] = []
        self._bytes = 0
        self._highest = next_offset - 1
        self._arrived = anyio.Event()

    @property
    def count(self) -> int:
        return len(self._messages)

    @property
    def cached_bytes(self) -> int:
        return self._bytes

    @property
    def span(self) -> int:
        return self._offsets[-1] - self._offsets[0] if self._offsets else 0

    @property
    def lowest(self) -> int | None:
        return min(self._messages) if self._messages else None

    @property
    def highest(self) -> int:
        return self._highest

    def put(self, messages: list[MessageExt]) -> list[MessageExt]:
        """Cache pulled messages; returns those not cached already (a redelivered duplicate of
        an offset still in process is not handed out twice)."""
        if messages and messages[0].queue_offset > self._highest:
            offsets = [m.queue_offset for m in messages]
            if all(map(int.__lt__, offsets, offsets[1:])):
                # the usual pull: strictly ascending offsets, all past what is cached (so none
                # is cached already, and they extend the sorted list as they are)
                self._offsets += offsets
                self._messages.update(zip(offsets, messages, strict=True))
                self._bytes += sum(len(m.body) for m in messages)
                self._highest = offsets[-1]
                self._arrived.set()
                return messages
        fresh = []
        for message in messages:
            offset = message.queue_offset
            if offset in self._messages:
                continue
            bisect.insort(self._offsets, offset)
            self._messages[offset] = message
            self._bytes += len(message.body)
            self._highest = max(self._highest, offset)
            fresh.append(message)
        if fresh:
            self._arrived.set()
        return fresh

    def remove(self, messages: list[MessageExt]) -> int:
        """Forget consumed messages; return the offset now safe to commit."""
        cached, offsets = self._messages, self._offsets
        if len(messages) > 1:
            removed = [m.queue_offset for m in messages]
            i = bisect.bisect_left(offsets, removed[0])
            end = i + len(removed)
            if offsets[i:end] == removed:  # (the usual: a run of cached offsets, one pull's)
                del offsets[i:end]
                for offset in removed:
                    del cached[offset]
                self._bytes -= sum([len(m.body) for m in messages])
                return self.commit_offset()
        for message in messages:
            offset = message.queue_offset
            if cached.pop(offset, None) is not None:
                del offsets[bisect.bisect_left(offsets, offset)]
                self._bytes -= len(message.body)
        return self.commit_offset()

    def commit_offset(self) -> int:
        offsets = self._offsets
        if self._taken:  # (orderly: a lower offset may have come since the take)
            first = self._taken[0].queue_offset
            return min(first, offsets[0]) if offsets else first
        return offsets[0] if offsets else self._highest + 1

    # ---- orderly ------------------------------------------------------------------------

    def take(self, limit: int) -> list[MessageExt]:
        """The next ``limit`` messages in offset order (orderly consumption)."""
        assert not self._taken, "commit or roll back what was taken first"
        offsets, self._offsets = self._offsets[:limit], self._offsets[limit:]
        self._taken = [self._messages[o] for o in offsets]
        return list(self._taken)

    def commit_taken(self, count: int | None = None) -> int:
        """The first ``count`` taken messages (all by default) are consumed: forget them, put
        the rest back to be consumed again first; return the offset to commit."""
        done = self._taken if count is None else self._taken[:count]
        for message in done:
            self._messages.pop(message.queue_offset, None)
            self._bytes -= len(message.body)
        self._taken = self._taken[len(done) :]
        self.rollback_taken()
        return self.commit_offset()

    def rollback_taken(self) -> None:
        """Consume the taken messages again, in offset order with the rest (before it, unless
        a lower offset came meanwhile)."""
        self._offsets = sorted([m.queue_offset for m in self._taken] + self._offsets)
        self._taken = []

    def wake(self) -> None:
        """Wake :meth:`wait_arrival` (a stop, or a renewed lock)."""
        self._arrived.set()

    async def wait_arrival(self) -> None:
        """Until :meth:`put` caches something new (returns at once if it did since the last
        call)."""
        await self._arrived.wait()
        self._arrived = anyio.Event()
