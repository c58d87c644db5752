"""Message handlers: checked when a consumer is built, reported when they fail.

A handler is an ``async def`` function of one message (a batch handler: of one list of
messages), or an object whose ``__call__`` is one. A plain ``def`` is refused, because calling
it on the event loop would block every other message - unless the consumer is built with
``sync_handler=True``, which runs it in a worker thread (at most ``concurrency`` at once).

What a handler's outcome means:

* returns: consumed (the offset may move past the message);
* raises an ``Exception``: a failure, retried later (send-back, ``%RETRY%``, the DLQ);
* raises ``CancelledError`` while nothing cancelled the consumer (a stray cancellation from the
  handler's own code, such as awaiting a future someone cancelled): a failure like any other,
  retried - never a silent stop of the consumer;
* raises ``KeyboardInterrupt`` or ``SystemExit``: the consumer stops (the message is not
  committed, so it is delivered again; the offsets of what was consumed are persisted) and
  re-raises it - out of ``async with``, or, for a consumer run with ``start()``, out of the
  event loop as asyncio does for a task;
* is cancelled because the consumer stops or the handler ran past ``consume_timeout``: not
  consumed (a timeout counts as a failure).

Failures are logged as ``consumer.handler_failed`` at WARNING with the traceback, the message
id, topic, queue and reconsume count: at most one line per queue every ``interval`` seconds,
the next one saying how many were suppressed (the ``rocketmq_consume_total{result="failed"}``
counter counts them all).
"""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Awaitable, Callable, Hashable
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from rocketmq_actors.errors import ConfigError
from rocketmq_actors.protocol.records import MessageExt

__all__ = ["FailureLog", "as_async_handler"]

A = TypeVar("A")


def _is_async(fn: object) -> bool:
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(fn, "__call__", None)  # noqa: B004 - an object whose __call__ is async
    return call is not None and inspect.iscoroutinefunction(call)


def _check_arity(fn: Callable[..., Any], name: str) -> None:
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin without a signature: cannot tell, accept it
        return
    try:
        signature.bind(object())
    except TypeError:
        raise ConfigError(
            f"{name} {fn!r} must take exactly one positional argument (the "
            f"{'list of messages' if 'batch' in name else 'message'}); its signature is "
            f"{signature}"
        ) from None


def as_async_handler(
    fn: object, *, name: str, sync: bool, limiter: anyio.CapacityLimiter | None = None
) -> Callable[[A], Awaitable[None]]:
    """``fn`` checked and, with ``sync``, wrapped to run in a worker thread.
    :class:`ConfigError` says what is wrong before the consumer starts."""
    if not callable(fn):
        raise ConfigError(f"{name} must be an async function, not {type(fn).__name__}")
    _check_arity(fn, name)
    if _is_async(fn):
        if sync:
            raise ConfigError(f"{name} {fn!r} is async: sync_handler=True is for plain functions")
        return fn
    if not sync:
        raise ConfigError(
            f"{name} {fn!r} is a plain function: make it 'async def', or pass "
            "sync_handler=True to run it in a worker thread"
        )
    function: Callable[[A], object] = fn

    async def in_thread(arg: A) -> None:
        await anyio.to_thread.run_sync(functools.partial(function, arg), limiter=limiter)

    return in_thread


class FailureLog:
    """Rate-limits a log line per key: the first failure of a key is logged, later ones within
    ``interval`` seconds are counted, and the next line logged for that key carries the count."""

    def __init__(self, interval: float = 10.0, *, clock: Callable[[], float] = time.monotonic):
        self.interval = interval
        self._clock = clock
        self._last: dict[Hashable, float] = {}
        self._suppressed: dict[Hashable, int] = {}

    def admit(self, key: Hashable) -> int | None:
        """The number of lines suppressed since the last one, if a line may be logged now;
        None if this one is suppressed."""
        now = self._clock()
        last = self._last.get(key)
        if last is not None and now - last < self.interval:
            self._suppressed[key] = self._suppressed.get(key, 0) + 1
            return None
        self._last[key] = now
        if len(self._last) > 4096:  # queues come and go: forget the oldest
            oldest = min(self._last, key=self._last.__getitem__)
            del self._last[oldest]
            self._suppressed.pop(oldest, None)
        return self._suppressed.pop(key, 0)


def describe(message: MessageExt) -> dict[str, object]:
    """The fields a log line about one message carries."""
    return {
        "msg_id": message.msg_id,
        "topic": message.topic,
        "queue": f"{message.broker_name}:{message.queue_id}",
        "queue_offset": message.queue_offset,
        "reconsume_times": message.reconsume_times,
    }
