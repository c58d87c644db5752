"""The client-side state of one owned queue: messages pulled but not yet consumed.

The offset to commit is the smallest offset still cached (a message still being consumed holds
the queue back), or one past the highest offset ever cached when nothing is left. Flow control
reads the cached count, bytes and span (highest - lowest cached offset).
"""

from __future__ import annotations

import bisect
import time

from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.records import MessageExt

__all__ = ["ProcessQueue"]


class ProcessQueue:
    def __init__(self, queue: MessageQueue, next_offset: int) -> None:
        self.queue = queue
        self.next_offset = next_offset  # where the next pull starts
        self.dropped = False
        self.last_pull = time.monotonic()
        self._offsets: list[int] = []  # sorted offsets of cached messages
        self._messages: dict[int, MessageExt] = {}
        self._bytes = 0
        self._highest = next_offset - 1

    @property
    def count(self) -> int:
        return len(self._offsets)

    @property
    def cached_bytes(self) -> int:
        return self._bytes

    @property
    def span(self) -> int:
        return self._offsets[-1] - self._offsets[0] if self._offsets else 0

    def put(self, messages: list[MessageExt]) -> list[MessageExt]:
        """Cache pulled messages; returns those not cached already (a redelivered duplicate of
        an offset still in process is not handed out twice)."""
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
        return fresh

    def remove(self, message: MessageExt) -> int:
        """Forget a consumed message; return the offset now safe to commit."""
        offset = message.queue_offset
        if self._messages.pop(offset, None) is not None:
            del self._offsets[bisect.bisect_left(self._offsets, offset)]
            self._bytes -= len(message.body)
        return self.commit_offset()

    def commit_offset(self) -> int:
        return self._offsets[0] if self._offsets else self._highest + 1
