"""Per-request waiters and a deadline watcher: the request path's cheap primitives.

An ``anyio.Event`` (created, set and awaited) and an ``anyio.move_on_after`` scope each cost
an order of magnitude more than an asyncio future; at tens of thousands of requests per second
that difference is the client's throughput (benchmarks/roundtrip.py). So:

* under asyncio a waiter is a plain loop future; under any other anyio backend it is an
  ``anyio.Event`` with the same small interface. What the connection knows of a request (its
  deadline, code and timeout) sits beside the waiter in the pending table, as a
  :data:`Pending` tuple: a task awaiting a future of exactly ``asyncio.Future`` takes the C
  fast path, where a subclass carrying those fields cost more a request (benchmarks/roundtrip.py);
* request timeouts are not one cancel scope per request: a :class:`DeadlineWatcher` task per
  connection sleeps until the earliest deadline it knows and expires what is overdue. With
  uniform timeouts it scans the pending table about once per timeout period.
"""

from __future__ import annotations

import asyncio
import functools
import math
import time
from collections.abc import Callable, Generator, MutableMapping, Sequence
from typing import Any, Protocol

import anyio

from rocketmq_actors.logs import get_logger

__all__ = [
    "Clock", "Completion", "DeadlineWatcher", "Pending", "Waiter", "set_results", "wait_done",
    "waiter_factory",
]  # fmt: skip

log = get_logger("rocketmq_actors.runtime")

Clock = Callable[[], float]


class Completion(Protocol):
    """What a connection completes when a request's answer (or its failure) arrives: a
    :class:`Waiter`, or an object of the caller's that acts on the outcome there and then,
    called from the connection's reader, deadline watcher or close. It must not raise, and
    must not start a request on the connection itself (it may schedule one)."""

    def set_result(self, result: Any) -> None: ...
    def set_exception(self, exc: BaseException) -> None: ...
    def done(self) -> bool: ...


class Waiter(Completion, Protocol):
    def cancelled(self) -> bool: ...  # (an asyncio future whose awaiting task was cancelled)
    def exception(self) -> BaseException | None: ...  # (only once done, and not cancelled)
    def result(self) -> Any: ...  # the result, or raise the error (only once done)
    def add_done_callback(self, fn: Callable[[Any], object], /) -> None: ...
    def __await__(self) -> Generator[Any, None, Any]: ...


#: A pending request: its waiter (or completion), deadline (on the connection's clock),
#: request code and timeout (the last two for the RequestTimeout error).
Pending = tuple[Completion, float, int, float]


class _EventWaiter:
    """The future's interface on any anyio backend."""

    __slots__ = ("_callbacks", "_error", "_event", "_result")

    def __init__(self) -> None:
        self._event = anyio.Event()
        self._result: Any = None
        self._error: BaseException | None = None
        self._callbacks: list[Callable[[Any], object]] = []

    def set_result(self, result: Any) -> None:
        if not self._event.is_set():
            self._result = result
            self._resolved()

    def set_exception(self, exc: BaseException) -> None:
        if not self._event.is_set():
            self._error = exc
            self._resolved()

    def _resolved(self) -> None:
        """Wake its awaiters and call its done callbacks: one that raises is logged and
        the others are still called, as an asyncio future's are (the resolver - a
        connection's reader, a producer's sender - never hears of it)."""
        self._event.set()
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            try:
                callback(self)
            except Exception as exc:
                log.error("waiter.callback_error", callback=repr(callback), exc_info=exc)

    def add_done_callback(self, fn: Callable[[Any], object], /) -> None:
        """As ``asyncio.Future``'s (called at once, not scheduled, when already done)."""
        if self._event.is_set():
            fn(self)
        else:
            self._callbacks.append(fn)

    def exception(self) -> BaseException | None:
        if not self._event.is_set():
            raise RuntimeError("the result is not ready")
        return self._error

    def done(self) -> bool:
        return self._event.is_set()

    def cancelled(self) -> bool:
        return False  # (awaiting it waits on the event: a cancelled caller leaves it pending)

    def result(self) -> Any:
        if not self._event.is_set():
            raise RuntimeError("the result is not ready")
        if self._error is not None:
            raise self._error
        return self._result

    def __await__(self) -> Generator[Any, None, Any]:
        yield from self._event.wait().__await__()
        if self._error is not None:
            raise self._error
        return self._result


def waiter_factory() -> tuple[Callable[[], Waiter], Clock]:
    """A constructor of waiters for the running event loop, and its clock (the loop's own
    ``time`` under asyncio: ``anyio.current_time`` pays for a backend dispatch per call)."""
    try:
        loop = asyncio.get_running_loop()  # raises outside asyncio (e.g. on trio)
    except RuntimeError:
        return _EventWaiter, anyio.current_time
    # asyncio's own loop: its future class and clock called straight, not through the loop's
    # Python methods (two frames less a request, on a path run once per message:
    # benchmarks/abtest.py); another loop (uvloop) keeps its own
    loop_class = type(loop)
    new: Callable[[], Waiter] = loop.create_future
    if loop_class.create_future is asyncio.BaseEventLoop.create_future:
        new = functools.partial(asyncio.Future, loop=loop)
    clock = time.monotonic if loop_class.time is asyncio.BaseEventLoop.time else loop.time
    return new, clock


def set_results(waiters: Sequence[Waiter], results: Sequence[Any]) -> None:
    """Resolve each of ``waiters`` with its result, in order; one that is done already (a
    caller cancelled it) is left as it is. No ``done()`` call a waiter: a try costs nothing
    until it catches, and an event-backed waiter ignores a second result itself."""
    for waiter, result in zip(waiters, results, strict=True):
        try:  # noqa: SIM105 - suppress() is a call a waiter
            waiter.set_result(result)
        except asyncio.InvalidStateError:  # (a cancelled one, or one resolved already)
            pass


async def wait_done(waiter: Waiter) -> None:
    """Wait until ``waiter`` is resolved, whatever its outcome, without retrieving its error and
    without cancelling it when the caller is cancelled (awaiting a future directly would)."""
    if waiter.done():
        return
    if isinstance(waiter, asyncio.Future):
        await asyncio.wait((waiter,))
    else:
        assert isinstance(waiter, _EventWaiter)
        await waiter._event.wait()


class DeadlineWatcher:
    """Expires the entries of ``pending`` whose deadline has passed.

    ``expire(key, entry)`` is called for each overdue entry, after it was removed from
    ``pending``. Call :meth:`track` with each new deadline: it wakes the watcher only when the
    new deadline is earlier than any it is sleeping towards.
    """

    def __init__(
        self,
        pending: MutableMapping[int, Pending],
        expire: Callable[[int, Pending], None],
    ) -> None:
        self._pending = pending
        self._expire = expire
        self._next = math.inf
        self._wake = anyio.Event()
        self.scans = 0

    def track(self, deadline: float) -> None:
        if deadline < self._next:
            self._next = deadline
            self._wake.set()

    def rebind(self, pending: MutableMapping[int, Pending]) -> None:
        self._pending = pending

    async def run(self) -> None:
        while True:
            now = anyio.current_time()
            if now >= self._next:
                self.scans += 1
                earliest = math.inf
                for key, entry in list(self._pending.items()):
                    deadline = entry[1]
                    if deadline <= now:
                        del self._pending[key]
                        self._expire(key, entry)
                    elif deadline < earliest:
                        earliest = deadline
                self._next = earliest
            if self._wake.is_set():
                self._wake = anyio.Event()
            if self._next == math.inf:
                await self._wake.wait()
            else:
                with anyio.move_on_after(max(self._next - anyio.current_time(), 0.0)):
                    await self._wake.wait()
