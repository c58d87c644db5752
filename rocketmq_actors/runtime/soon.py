"""Calls queued now and run together soon, from one event-loop callback.

asyncio runs each done callback of each future from a handle of its own (``call_soon``): a
handle made, queued and run per call, on a path where one chunk of answers ends many requests.
A :class:`CallBatch` queues ``fn(arg)`` and runs every call queued before its turn from one
loop callback, in order.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from rocketmq_actors.runtime.backend import current_loop

__all__ = ["Call", "CallBatch"]

Call = Callable[[Any], object]


class CallBatch:
    """``add(fn, arg)`` calls ``fn(arg)`` soon, on the running event loop. A call that
    raises is reported to ``on_error(fn, exc)`` and the others go on, as asyncio's handles
    do (a ``CancelledError`` included; an ``on_error`` that raises stops nothing either); a
    ``KeyboardInterrupt`` or ``SystemExit`` propagates, and the calls after it run first on
    the next turn."""

    __slots__ = ("_call_soon", "_calls", "_on_error")

    def __init__(self, on_error: Callable[[Call, BaseException], None]) -> None:
        self._calls: list[tuple[Call, Any]] = []
        self._call_soon: Callable[[Callable[[], object]], object] | None = None
        self._on_error = on_error

    def add(self, fn: Call, arg: Any) -> None:
        """Queue ``fn(arg)``; :class:`RuntimeError`, with nothing queued, if no event loop
        runs in this thread (or it is closed)."""
        calls = self._calls
        if not calls:  # the first since the last run: schedule one (before queueing: if that
            self._schedule()  # fails, nothing is left queued that no run would take)
        calls.append((fn, arg))

    def _schedule(self) -> None:
        call_soon = self._call_soon
        if call_soon is None:  # (the running loop's, once known)
            loop = current_loop()
            if loop is None:
                raise RuntimeError("no running event loop")
            call_soon = self._call_soon = loop.call_soon
        call_soon(self._run)

    def _run(self) -> None:
        calls, self._calls = self._calls, []
        for index, (fn, arg) in enumerate(calls):
            try:
                fn(arg)
            except (KeyboardInterrupt, SystemExit):
                rest = calls[index + 1 :]
                if rest:  # first on the next turn, before what was queued since
                    if not self._calls:
                        self._schedule()
                    self._calls[:0] = rest
                raise
            except BaseException as exc:  # (as asyncio's Handle._run: CancelledError too)
                with contextlib.suppress(Exception):  # (a failing report drops no call)
                    self._on_error(fn, exc)
