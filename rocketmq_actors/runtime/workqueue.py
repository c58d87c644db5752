"""WorkQueue: a bounded FIFO between tasks of one event loop, for the consume hot path.

An anyio memory object stream costs a checkpoint and an event per item; measured on the
PushConsumer's work channel it took a third of the time per message. This queue hands an item
straight to a waiting getter (a loop future, see :mod:`.waiters`) and only waits when it must.
A getter that finds items ready still passes a checkpoint every ``yield_every`` items, so that
a busy consumer cannot starve the rest of the loop.

Cancellation-safe: a getter cancelled after an item was handed to it puts the item back at the
front; a cancelled waiter is never handed anything. :meth:`close` makes waiting and later
getters raise ``anyio.EndOfStream`` once the queue is empty, and putters raise
``anyio.ClosedResourceError``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Generic, TypeVar

import anyio
import anyio.lowlevel

from .waiters import Waiter, waiter_factory

__all__ = ["WorkQueue"]

T = TypeVar("T")


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
        """Hand ``item`` to a waiting getter or queue it if there is room (and, when
        ``behind_putters``, no putter waits for room first); False if it must wait."""
        if self._closed:
            raise anyio.ClosedResourceError
        if self._wake_one(self._getters, item):
            return True
        if len(self._items) < self.capacity and not (behind_putters and self._putters):
            self._items.append(item)
            return True
        return False

    def offer(self, item: T) -> bool:
        """Put ``item`` if that needs no waiting (a getter waits, or there is room): True;
        False if the queue is full. The caller that must not lose it then awaits :meth:`put`
        (one coroutine less per item while the queue has room)."""
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
        if self._items:
            item = self._items.popleft()
            if self._putters:  # (a call only when one waits)
                self._wake_one(self._putters, None)
            return item
        if self._closed:
            raise anyio.EndOfStream
        waiter = self._waiter()
        self._getters.append(waiter)
        try:
            got: T = await waiter
        except BaseException:
            if waiter in self._getters:
                self._getters.remove(waiter)
            elif waiter.done():
                try:
                    handed: T = waiter.result()
                except BaseException:  # cancelled or closed: nothing was handed over
                    pass
                else:  # handed to us, but we are leaving: to the next getter, or back in front
                    if not self._wake_one(self._getters, handed):
                        self._items.appendleft(handed)
            raise
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
