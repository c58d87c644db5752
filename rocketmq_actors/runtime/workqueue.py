"""WorkQueue: a bounded FIFO between tasks of one event loop, for the consume hot path.

An anyio memory object stream costs a checkpoint and an event per item, a large part of the
consume path's cost per message (benchmarks/nullbroker.py, path d). This queue hands an item
straight to a waiting getter (a loop future, see :mod:`.waiters`) and only waits when it must.
A getter that finds items ready still passes a checkpoint every ``yield_every`` items, so that
a busy consumer cannot starve the rest of the loop. An item can be shared by several getters,
each taking a part of it (:meth:`get_part`): it holds one place in the queue for all its parts.

Cancellation-safe: a getter cancelled after an item was handed to it puts the item back at the
front; a cancelled waiter is never handed anything. :meth:`close` makes waiting and later
getters raise ``anyio.EndOfStream`` once the queue is empty, and putters raise
``anyio.ClosedResourceError``.
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Callable
from typing import Generic, Literal, TypeVar

import anyio
import anyio.lowlevel

from .waiters import Waiter, waiter_factory

__all__ = ["WorkQueue"]

T = TypeVar("T")
P = TypeVar("P")


class _Look(enum.Enum):
    """What a waiting getter is woken with to look at the front item (a shared one)."""

    LOOK = 0


class WorkQueue(Generic[T]):
    def __init__(self, capacity: int, *, yield_every: int = 32) -> None:
        if capacity < 1:
            raise ValueError("capacity must be >= 1")
        self.capacity = capacity
        self.yield_every = yield_every
        self._items: deque[T] = deque()
        self._getters: deque[Waiter] = deque()
        self._putters: deque[Waiter] = deque()
        self._closed = False
        self._since_yield = 0
        # a getter was woken to look at the front item, and has not run; whenever items are
        # queued while getters wait, one is (getters wait only on an empty queue, and what
        # queues an item while they do - a shared item's rest - wakes one)
        self._looking = False
        self._new_waiter: Callable[[], Waiter] | None = None

    def __len__(self) -> int:
        return len(self._items)

    def _waiter(self) -> Waiter:
        if self._new_waiter is None:
            self._new_waiter = waiter_factory()[0]
        return self._new_waiter()

    @staticmethod
    def _wake_one(waiters: deque[Waiter], value: object) -> bool:
        while waiters:
            waiter = waiters.popleft()
            if not waiter.done():
                waiter.set_result(value)
                return True
        return False

    def _place(self, item: T, behind_putters: bool) -> bool:
        """Hand ``item`` to a waiting getter of the empty queue, or queue it if there is room
        (and, when ``behind_putters``, no putter waits for room first); False if it must
        wait."""
        if self._closed:
            raise anyio.ClosedResourceError
        if not self._items and self._wake_one(self._getters, item):
            return True
        if len(self._items) < self.capacity and not (behind_putters and self._putters):
            self._items.append(item)
            return True
        return False

    def offer(self, item: T) -> bool:
        """Put ``item`` if that needs no waiting (a getter waits on the empty queue, or there
        is room): True; False if the queue is full. The caller that must not lose it then
        awaits :meth:`put` (one coroutine less per item while the queue has room)."""
        return self._place(item, behind_putters=True)

    async def put(self, item: T) -> None:
        # (a putter woken for a freed slot takes it even while others still wait)
        while not self._place(item, behind_putters=False):
            waiter = self._waiter()
            self._putters.append(waiter)
            try:
                await waiter
            except BaseException:
                if waiter in self._putters:
                    self._putters.remove(waiter)
                elif waiter.done() and not self._closed:
                    self._wake_one(self._putters, None)  # pass the free slot on
                raise

    async def get(self) -> T:
        self._since_yield += 1
        if self._since_yield >= self.yield_every:
            self._since_yield = 0
            await anyio.lowlevel.checkpoint()  # before taking: a cancellation here loses nothing
        while True:
            if self._items:
                item = self._items.popleft()
                if self._putters:  # (a call only when one waits)
                    self._wake_one(self._putters, None)
                return item
            got = await self._wait()
            if got is not _Look.LOOK:
                return got

    async def get_part(self, take: Callable[[T], tuple[P, bool]]) -> P:
        """A part of the first item, for items that several getters share: ``take(item)``
        returns the part it took and whether the item has more. An item with more stays in
        front; it leaves the queue with its last part. (``take`` runs with no wait after it:
        a part taken is never lost to a cancellation.)

        While items are queued and getters wait (behind a shared item), one waiting getter is
        woken to look at the front (one at a time: when it runs and takes a part, it wakes the
        next). A getter that takes part after part without waiting in between (its work on
        each never suspends) so takes the whole item while the getter woken for it has not run
        yet: one task switch for the item, not one for each part, and as many getters at work
        on it as its parts wait for. Not to be mixed with :meth:`get` on one queue (which takes
        an item whole)."""
        self._since_yield += 1
        if self._since_yield >= self.yield_every:
            self._since_yield = 0
            await anyio.lowlevel.checkpoint()
        items = self._items
        while not items:
            got = await self._wait()
            if got is not _Look.LOOK:  # handed over whole: what is left goes in front
                part, more = take(got)
                if more:
                    items.appendleft(got)
                    if self._getters:
                        self._look()
                return part
        part, more = take(items[0])
        if not more:
            items.popleft()
            if self._putters:
                self._wake_one(self._putters, None)
        if self._getters and items:  # (a part, or the next item, for a waiting getter)
            self._look()
        return part

    def _look(self) -> None:
        """Wake a waiting getter to look at the front item (none if one was woken already)."""
        if self._items and not self._looking:
            self._looking = self._wake_one(self._getters, _Look.LOOK)

    async def _wait(self) -> T | Literal[_Look.LOOK]:
        """Wait for an item handed over by a putter, or to look at the front (the queue is
        empty)."""
        if self._closed:
            raise anyio.EndOfStream
        waiter = self._waiter()
        self._getters.append(waiter)
        try:
            got: T | Literal[_Look.LOOK] = await waiter
        except BaseException:
            if waiter in self._getters:
                self._getters.remove(waiter)
            elif waiter.done():
                try:
                    handed: T | Literal[_Look.LOOK] = waiter.result()
                except BaseException:  # cancelled or closed: nothing was handed over
                    pass
                else:
                    if handed is _Look.LOOK:  # woken to look, but leaving: another looks
                        self._looking = False
                        self._look()
                    # handed an item, but leaving: to the next getter, or back in front
                    elif not self._wake_one(self._getters, handed):
                        self._items.appendleft(handed)
            raise
        if got is _Look.LOOK:
            self._looking = False
        return got

    def requeue(self, item: T) -> None:
        """Put ``item`` back in front, whatever the room (a getter that took it was cancelled
        before it could finish with it); dropped once the queue is closed."""
        if self._closed:
            return
        if not self._wake_one(self._getters, item):
            self._items.appendleft(item)

    def take_all(self) -> list[T]:
        """Remove and return every queued item (what no getter will take any more)."""
        items = list(self._items)
        self._items.clear()
        while self._wake_one(self._putters, None):
            pass
        return items

    def close(self) -> None:
        """No more puts; getters drain what is left, then get ``anyio.EndOfStream``."""
        self._closed = True
        while self._getters:
            waiter = self._getters.popleft()
            if not waiter.done():
                waiter.set_exception(anyio.EndOfStream())
        while self._putters:
            waiter = self._putters.popleft()
            if not waiter.done():
                waiter.set_exception(anyio.ClosedResourceError())
