"""A push consumer's ``suspend()`` / ``resume()`` (the Java client's): while suspended, no queue
actor starts a pull. A pull already in flight completes, and what is cached - pulled before the
suspension, or by that pull - is still consumed, as in Java; rebalancing goes on."""

from __future__ import annotations

import anyio

from rocketmq_actors.runtime.signal import Signal

__all__ = ["Suspension"]


class Suspension:
    __slots__ = ("_changed", "_resumed", "parked", "suspended")

    def __init__(self) -> None:
        self.suspended = False
        self.parked = 0  # queue actors waiting for resume(), no pull in flight
        self._resumed: anyio.Event | None = None  # (made when a queue actor first waits)
        self._changed = Signal()

    def suspend(self) -> None:
        self.suspended = True

    def resume(self) -> None:
        self.suspended = False
        if self._resumed is not None:
            self._resumed.set()
            self._resumed = None

    async def park(self) -> None:
        """A queue actor's wait, until :meth:`resume` (at once when not suspended)."""
        self.parked += 1
        self._changed.set()
        try:
            while self.suspended:
                if self._resumed is None:
                    self._resumed = anyio.Event()
                await self._resumed.wait()
        finally:
            self.parked -= 1
            self._changed.set()

    async def wait_parked(self, count: int) -> None:
        """Until at least ``count`` queue actors are parked (their last pulls have ended)."""
        while self.parked < count:
            await self._changed.wait()
