"""The typed future ``submit`` and ``send_nowait`` return, and what ``flush`` reports."""

from __future__ import annotations

import math
from collections.abc import Callable, Generator
from typing import Any, Protocol

import anyio
import attrs

from rocketmq_actors.runtime.waiters import Waiter, wait_done

from .result import SendResult

__all__ = ["FlushResult", "SendFuture", "flush_futures"]


class SendFuture(Protocol):
    """The future of one ``submit`` or ``send_nowait``: ``await`` it for its
    :class:`SendResult` (or its error), or poll it. Under asyncio it is an ``asyncio.Future``;
    under trio, an event-backed object with the same methods."""

    def done(self) -> bool:
        """True once the send is resolved (a result, an error, or cancelled)."""
        ...

    def cancelled(self) -> bool:
        """True if a caller cancelled while awaiting it (asyncio cancels the awaited future);
        the message may still be sent, and the other sends are not affected."""
        ...

    def result(self) -> SendResult:
        """The result, or raise the send's error (only once ``done()``)."""
        ...

    def exception(self) -> BaseException | None:
        """The send's error, or None (only once ``done()``)."""
        ...

    def add_done_callback(self, fn: Callable[[Any], object], /) -> None:
        """Call ``fn(future)`` once the send is resolved (at once if it is)."""
        ...

    def __await__(self) -> Generator[Any, None, SendResult]: ...


@attrs.frozen
class FlushResult:
    """What ``flush`` waited for: the sends ``submit`` and ``send_nowait`` admitted before it
    was called. ``pending`` is what was still unresolved when its timeout passed (0 without a
    timeout); ``cancelled`` the futures whose awaiting caller was cancelled (their outcome is
    not known to the future: neither sent nor failed)."""

    sent: int
    failed: int
    pending: int = 0
    cancelled: int = 0

    @property
    def total(self) -> int:
        """Every send the flush waited for: sent, failed, pending and cancelled."""
        return self.sent + self.failed + self.pending + self.cancelled


async def flush_futures(futures: list[Waiter], timeout: float | None) -> FlushResult:
    """Wait (at most ``timeout`` seconds; None: no limit) for ``futures`` to be resolved,
    without cancelling any, and count how they ended."""
    with anyio.move_on_after(math.inf if timeout is None else timeout):
        for future in futures:
            await wait_done(future)
    sent = failed = pending = cancelled = 0
    for future in futures:
        if not future.done():
            pending += 1
        elif future.cancelled():  # (exception() would raise CancelledError)
            cancelled += 1
        elif future.exception() is None:
            sent += 1
        else:
            failed += 1
    return FlushResult(sent, failed, pending, cancelled)
