"""A wake-up that fires many times: one actor says "something changed" (:meth:`Signal.set`),
another waits for the next such change (:meth:`Signal.wait`). A change signalled while
nobody waited is not kept: the waiter looks at the state itself before it waits."""

from __future__ import annotations

import anyio

__all__ = ["Signal"]


class Signal:
    __slots__ = ("_event", "_waiting")

    def __init__(self) -> None:
        self._event = anyio.Event()
        self._waiting = 0

    def set(self) -> None:
        if self._waiting:  # (nothing to wake otherwise: a call less where it runs per message)
            self._event.set()

    async def wait(self) -> None:
        """Until the next :meth:`set` after this call."""
        if self._event.is_set():
            self._event = anyio.Event()
        self._waiting += 1
        try:
            await self._event.wait()
        finally:
            self._waiting -= 1
