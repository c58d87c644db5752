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
  consumed (a timeout counts as a failure);
* settled the message explicitly (``message.ack()``, ``message.nack(delay=...)``, ``async with
  message.process()``): that settlement wins over the above (see :mod:`.settlement`).

Failures are logged as ``consumer.handler_failed`` at WARNING with the traceback, the message
id, topic, queue and reconsume count: at most one line per queue every ``interval`` seconds,
the next one saying how many were suppressed (the
``rocketmq_client_consume_total{result="failed"}`` counter counts them all).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable

from rocketmq_actors.protocol.records import MessageExt
from rocketmq_actors.runtime.callbacks import as_async_handler

__all__ = ["FailureLog", "as_async_handler"]


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
