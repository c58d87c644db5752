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

from rocketmq_actors.protocol.records import MessageExt
from rocketmq_actors.runtime.callbacks import as_async_handler

__all__ = ["as_async_handler"]


def describe(message: MessageExt) -> dict[str, object]:
    """The fields a log line about one message carries."""
    return {
        "msg_id": message.msg_id,
        "topic": message.topic,
        "queue": f"{message.broker_name}:{message.queue_id}",
        "queue_offset": message.queue_offset,
        "reconsume_times": message.reconsume_times,
    }
