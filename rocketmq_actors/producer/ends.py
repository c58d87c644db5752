"""What happens once a send admitted by the senders has ended: its callback is called (queued
on the event loop, with its future); a producer's hooks hear of the end through it
(:mod:`.sendhooks`)."""

from __future__ import annotations

import functools
from typing import Any

from rocketmq_actors.errors import InternalError, RocketMQError, SendFailed
from rocketmq_actors.logs import FailureLog, get_logger
from rocketmq_actors.runtime.soon import Call, CallBatch
from rocketmq_actors.runtime.waiters import Waiter

from .queued import Queued

__all__ = ["SendEnds", "send_failure"]

log = get_logger("rocketmq_actors.producer")


class SendEnds:
    def __init__(self, name: str) -> None:
        self.name = name  # the producer's, in log lines
        self._callbacks = CallBatch(self._callback_failed)
        self._callback_errors = FailureLog()

    def call_back(self, item: Queued) -> None:
        """Queue the call of the send's callback with its future (once: it is then cleared)."""
        callback, item.callback = item.callback, None
        if callback is not None:
            self._callbacks.add(callback, item.future)

    def call_back_all(self, futures: list[Waiter], callbacks: list[Call | None]) -> None:
        """Queue the calls of an auto-batch's callbacks (None: a message without one), each
        with its message's future, in order."""
        add = self._callbacks.add
        for future, callback in zip(futures, callbacks, strict=True):
            if callback is not None:
                add(callback, future)

    def _callback_failed(self, callback: Call, exc: BaseException) -> None:
        """A send's callback raised: logged, at most a line per callback function per
        interval (a ``functools.partial`` counts as the function it wraps)."""
        function: Any = callback
        while isinstance(function, functools.partial) or getattr(function, "__wrapped__", None):
            function = function.func if isinstance(function, functools.partial) else (
                function.__wrapped__)  # fmt: skip
        name = getattr(function, "__qualname__", None) or type(function).__qualname__
        name = f"{getattr(function, '__module__', None) or '?'}.{name}"
        suppressed = self._callback_errors.admit(name)
        if suppressed is not None:
            log.error("producer.send_callback_error", producer=self.name, callback=name,
                      error=type(exc).__name__, suppressed=suppressed, exc_info=exc)  # fmt: skip


def send_failure(topic: str, exc: Exception) -> RocketMQError:
    """A send's error: a RocketMQError as it is; a bug, as InternalError in SendFailed,
    logged (it fails this send, never the producer)."""
    if isinstance(exc, RocketMQError):
        return exc
    log.error("producer.send_internal_error", topic=topic, exc_info=exc)
    internal = InternalError(f"unexpected error in send: {exc!r}")
    internal.__cause__ = exc
    return SendFailed(topic, [internal])
