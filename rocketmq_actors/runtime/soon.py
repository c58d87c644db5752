"""Calls queued now and run together soon, from one event-loop callback.

asyncio runs each done callback of each future from a handle of its own (``call_soon``): a
handle made, queued and run per call, on a path where one chunk of answers ends many requests.
A :class:`CallBatch` queues ``fn(arg)`` and runs every call queued before its turn from one
loop callback, in order. Outside asyncio (another anyio backend) it calls at once, as that
backend's waiters run their callbacks when they are set.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

__all__ = ["CallBatch"]

Call = Callable[[Any], object]


def _call_now(fn: Callable[[], object]) -> None:
    fn()


class CallBatch:
    """``add(fn, arg)`` calls ``fn(arg)`` soon. A call that raises an ``Exception`` is
    reported to ``on_error(fn, exc)`` and the others go on; a ``BaseException`` (a
    ``KeyboardInterrupt``) propagates, and the calls after it run on the next turn."""

    __slots__ = ("_call_soon", "_calls", "_on_error")

    def __init__(self, on_error: Callable[[Call, Exception], None]) -> None:
        self._calls: list[tuple[Call, Any]] = []
        self._call_soon: Callable[[Callable[[], object]], object] | None = None
        self._on_error = on_error

    def add(self, fn: Call, arg: Any) -> None:
        calls = self._calls
        calls.append((fn, arg))
        if len(calls) == 1:  # the first since the last run: schedule one
            call_soon = self._call_soon
            if call_soon is None:  # (the running loop's, once known)
                try:
                    call_soon = asyncio.get_running_loop().call_soon
                except RuntimeError:  # not asyncio
                    call_soon = _call_now
                self._call_soon = call_soon
            call_soon(self._run)

    def _run(self) -> None:
        calls, self._calls = self._calls, []
        done = 0
        try:
            for fn, arg in calls:
                done += 1
                try:
                    fn(arg)
                except Exception as exc:
                    self._on_error(fn, exc)
        finally:
            if done < len(calls):  # a BaseException: the rest run next time
                rest = calls[done:]
                for fn, arg in rest:
                    self.add(fn, arg)
