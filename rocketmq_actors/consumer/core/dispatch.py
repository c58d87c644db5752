"""Running a push consumer's handler on messages, and what its outcome means.

:meth:`Dispatcher.invoke` is called by the consume services (concurrent workers, through
:meth:`Dispatcher.invoke_one`; orderly queue loops; CONSUME_MESSAGE_DIRECTLY) and answers True
(consumed), False (failed: retry it) or None (not consumed, but for messages acked already: the
consumer is stopping, or the handler raised ``KeyboardInterrupt`` / ``SystemExit``, which stops
the consumer). A message that could not be decoded never reaches the handler: it is a failure,
logged at ERROR with its queue and offset (``consumer.undecodable``), and so goes back through
the retry topic to the DLQ like any failed message. See :mod:`.handlers` for the outcomes a
handler can have.

Each delivered message gets a fresh :class:`~.settlement.Settlement`: an explicit
``message.ack()`` or ``message.nack()`` wins over the handler's outcome, and a message left
unsettled takes it (see :mod:`.settlement`): once :meth:`Dispatcher.invoke` answers True or
False every message of the call has an outcome (a handler cancelled by ``consume_timeout``
leaves the unsettled ones at None: failed). It answers False when any message failed, and
the services settle each message by its own outcome (:func:`settled`).
"""

from __future__ import annotations

import enum
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, cast

import anyio

from rocketmq_actors.clientmetrics import ClientMetrics
from rocketmq_actors.consumer.core.delivery import Abandoned, Deliveries
from rocketmq_actors.consumer.core.handlers import as_async_handler, describe
from rocketmq_actors.consumer.core.message import ReceivedMessage, received
from rocketmq_actors.consumer.core.settlement import Outcome, Settlement
from rocketmq_actors.hooks import ConsumeContext, Hooks, with_inner
from rocketmq_actors.logs import FailureLog, get_logger
from rocketmq_actors.metrics import METRICS, SeriesCache
from rocketmq_actors.names import unwrap
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.messages import Property
from rocketmq_actors.protocol.records import MessageExt
from rocketmq_actors.protocol.trace import ConsumeReturnType
from rocketmq_actors.runtime.signal import Signal
from rocketmq_actors.trace.hooks import ConsumeTrace
from rocketmq_actors.tracing import ProcessSpans, Tracing

__all__ = ["BatchHandler", "Dispatcher", "Handler", "async_handlers"]

log = get_logger("rocketmq_actors.consumer")

Handler = Callable[[ReceivedMessage[Any]], Awaitable[None]]
# (a list is invariant: a batch handler typed with list[MessageExt] is accepted as well)
BatchHandler = (
    Callable[[list[ReceivedMessage[Any]]], Awaitable[None]]
    | Callable[[list[MessageExt]], Awaitable[None]]
)


def async_handlers(
    handler: Handler | None, batch_handler: BatchHandler | None, *, sync: bool, concurrency: int
) -> tuple[Handler | None, BatchHandler | None]:
    """A consumer's handlers checked and, with ``sync`` (``sync_handler=True``), each wrapped to
    run in a worker thread, ``concurrency`` threads at most between them."""
    limiter = anyio.CapacityLimiter(concurrency) if sync else None
    if handler is not None:
        handler = as_async_handler(handler, name="handler", sync=sync, limiter=limiter)
    if batch_handler is not None:
        batch_handler = as_async_handler(batch_handler, name="batch_handler", sync=sync,
                                         limiter=limiter)  # fmt: skip
    return handler, batch_handler


class Dispatcher:
    def __init__(
        self,
        group: str,
        *,
        handler: Handler | None,
        batch_handler: BatchHandler | None,
        consume_timeout: float | None,
        tracing: Tracing | None,
        fail: Callable[[BaseException], None],
        namespace: str | None = None,
        msg_trace: ConsumeTrace | None = None,
        hooks: Hooks | None = None,
        metrics: ClientMetrics | None = None,
    ) -> None:
        self.group = group
        self.msg_trace = msg_trace  # message trace hooks (SubBefore / SubAfter records)
        # the application's hooks (rocketmq_actors.hooks), and the client's own inside them:
        # message trace records, then OpenTelemetry's process span
        inner: list[Any] = [] if msg_trace is None else [msg_trace]
        if tracing is not None:
            inner.append(ProcessSpans(tracing))
        self.metrics = metrics  # the RocketMQ 5.x clients' metrics
        if metrics is not None:
            inner.append(metrics)
        self.hooks = with_inner(hooks, inner, "consumer.hook_failed")
        self.namespace = namespace
        self.handler = handler
        self.batch_handler = batch_handler
        self.consume_timeout = consume_timeout
        self.deliveries = Deliveries() if handler is None and batch_handler is None else None
        self._fail = fail
        self.consumed = 0
        self.failed = 0
        self.in_flight = 0
        self._idle = Signal()  # (set per call: nothing to do while no stop waits)
        self._failure_log = FailureLog()
        self._ok_series = SeriesCache(  # topic -> (messages consumed, handler seconds)
            lambda topic: (
                METRICS.key("rocketmq_client_consume_total", group=group, topic=topic, result="ok"),
                METRICS.key("rocketmq_client_consume_seconds", group=group, topic=topic),
            )
        )

    @property
    def has_handler(self) -> bool:
        return self.deliveries is None

    async def wait_idle(self) -> None:
        """Until no handler runs (the drain of a stop)."""
        while self.in_flight:
            await self._idle.wait()

    def _before(self, presented: list[ReceivedMessage[Any]]) -> ConsumeContext:
        """The handler call's hooks' context, after their ``before_consume``."""
        first = presented[0]
        queue = MessageQueue(first.topic, first.broker_name or "", first.queue_id)
        hooked = ConsumeContext(self.group, presented, queue)
        assert self.hooks is not None
        self.hooks.before("before_consume", hooked)
        return hooked

    async def invoke(
        self, messages: list[MessageExt], *, timed: bool = True, began: float | None = None
    ) -> bool | None:
        """Run the handler (or hand the messages to ``async for``): True when all were consumed,
        False when any failed (each message's :func:`settled` outcome says which), None when
        the consumer stops first (the acked ones are consumed, the rest left unconsumed).
        ``timed``: bound it by ``consume_timeout`` here (the concurrent workers are bounded by
        their sweeper instead). ``began``: the caller's clock reading as it called (its own)."""
        single = len(messages) == 1  # (the usual call: no list built but the one presented)
        if (messages[0].decode_error is not None if single
                else any(m.decode_error is not None for m in messages)):  # fmt: skip
            for message in messages:
                if message.decode_error is not None:
                    log.error("consumer.undecodable", group=self.group,
                              reason=message.decode_error, **describe(message))  # fmt: skip
            self._count_failed(messages)
            return False
        self.in_flight += 1
        began = time.monotonic() if began is None else began
        if single:
            presented = [_present(messages[0], self.namespace)]
            settlements = [Settlement()]
            _settle_with(presented[0], settlements[0])
        else:
            presented = [_present(m, self.namespace) for m in messages]
            settlements = [Settlement() for _ in presented]
            for message, settlement in zip(presented, settlements, strict=True):
                _settle_with(message, settlement)
        hooked = self._before(presented) if self.hooks is not None else None
        outcome = _TIME_OUT  # (cancelled: the consumer stops, or it timed out)
        error: BaseException | None = None
        try:
            if timed and self.consume_timeout is not None:
                with anyio.fail_after(self.consume_timeout):
                    await self._call(presented)
            else:
                await self._call(presented)
            ok = self._outcome(presented, settlements, began)
            outcome = _SUCCESS if ok else _FAILED
            return ok
        except BaseException as exc:
            error = exc
            if isinstance(exc, Exception) and not isinstance(exc, Abandoned):
                overran = (timed and self.consume_timeout is not None
                           and isinstance(exc, TimeoutError)
                           and time.monotonic() - began >= self.consume_timeout)  # fmt: skip
                # (Java's trace tells a handler past consumeTimeout from one that raised)
                outcome = ConsumeReturnType.TIME_OUT if overran else ConsumeReturnType.EXCEPTION
            ended = self._ended_by(presented, exc, began)
            if ended is _RERAISE:
                raise
            return ended
        finally:
            for settlement in settlements:
                settlement.close()
            self.in_flight -= 1
            if not self.in_flight:
                self._idle.set()
            if hooked is not None and self.hooks is not None:
                hooked.success = outcome is _SUCCESS
                hooked.status, hooked.error = outcome.name, error
                hooked.elapsed = time.monotonic() - began
                self.hooks.after("after_consume", hooked)

    async def invoke_one(self, messages: list[MessageExt], began: float) -> bool | None:
        """``invoke(messages, timed=False, began=began)`` in fewer steps for the concurrent
        workers' usual call: one pulled message, whose topic needs no change, for a
        per-message handler without hooks (anything else goes to :meth:`invoke`). The same
        outcomes, settlement and counts."""
        message = messages[0]
        handler = self.handler
        if (len(messages) != 1 or handler is None or self.batch_handler is not None
                or self.hooks is not None or message.__class__ is not ReceivedMessage
                or message.decode_error is not None or self.namespace
                or message.topic.startswith("%RETRY%")):  # fmt: skip
            return await self.invoke(messages, timed=False, began=began)
        settlement = Settlement()
        _settle_with(message, settlement)
        self.in_flight += 1
        try:
            await handler(message)
        except BaseException as exc:
            ended = self._ended_by([message], exc, began)
            if ended is _RERAISE:
                raise
            return ended
        finally:
            settlement.close()
            self.in_flight -= 1
            if not self.in_flight:
                self._idle.set()
        if settlement.outcome is None:
            settlement.outcome = _ACK  # (Settlement.resolve)
        if settlement.outcome is _ACK:
            self._add_consumed(message.topic, 1, began)
            return True
        return self.tally(messages, began, None)

    def _ended_by(
        self, presented: list[ReceivedMessage[Any]], exc: BaseException, began: float
    ) -> bool | _Reraise | None:
        """The handler call raised ``exc``: the call's outcome (as :meth:`invoke` answers), or
        ``_RERAISE`` when ``exc`` goes on (a real cancellation, or what no consumer handles)."""
        if isinstance(exc, Abandoned):  # the consumer stops: the acked ones are consumed
            self._count_consumed(presented, began)
            return None
        if isinstance(exc, Exception):
            return self._raised(presented, exc, began)
        if isinstance(exc, anyio.get_cancelled_exc_class()):
            if anyio.current_effective_deadline() == -math.inf:
                return _RERAISE  # cancelled for real: the consumer stops, or it timed out
            # a stray cancellation from the handler's code: it failed (the acked ones aside)
            return self.tally(presented, began, exc)
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            log.warning("consumer.handler_interrupted", group=self.group, error=repr(exc),
                        **describe(presented[0]))  # fmt: skip
            self._count_consumed(presented, began)
            self._fail(exc)  # the consumer stops and raises it; the unacked stay unconsumed
            return None
        return _RERAISE

    def _raised(self, presented: list[ReceivedMessage[Any]], exc: Exception, began: float) -> bool:
        _resolve(presented, Outcome.NACK)  # the explicit acks still hold
        return self.tally(presented, began, exc)

    def _outcome(
        self, presented: list[ReceivedMessage[Any]], settlements: list[Settlement], began: float
    ) -> bool:
        """The handler returned: an unsettled message is acked (the explicit nacks still hold),
        and the call is counted (one pass, run once per handler call)."""
        acked = 0
        for settlement in settlements:
            settlement.resolve(_ACK)
            if settlement.outcome is _ACK:
                acked += 1
        if acked == len(presented):  # (the usual outcome)
            self._add_consumed(presented[0].topic, acked, began)
            return True
        return self.tally(presented, began, None)

    def tally(
        self, messages: Sequence[MessageExt], began: float, exc: BaseException | None
    ) -> bool:
        """Count each message of a call by its own settlement (acked: consumed; anything else:
        failed), log the failures (a handler's exception at most one line per queue every
        10 s); True when all were consumed."""
        failed = len(messages) - self._count_consumed(messages, began)
        first = messages[0]
        if failed:
            self._count_failed(messages, failed)
            if exc is None:
                log.debug("consumer.nacked", group=self.group, count=failed, **describe(first))
            else:
                suppressed = self._failure_log.admit((first.topic, first.broker_name,
                                                      first.queue_id))  # fmt: skip
                if suppressed is not None:
                    log.warning("consumer.handler_failed", group=self.group, count=failed,
                                error=repr(exc), suppressed=suppressed, exc_info=exc,
                                **describe(first))  # fmt: skip
        return not failed

    def _count_consumed(self, messages: Sequence[MessageExt], began: float) -> int:
        """Count the acked messages as consumed; how many."""
        acked = 0
        for message in messages:  # (a loop: no generator object a call)
            if settled(message) is _ACK:
                acked += 1
        if acked:
            self._add_consumed(messages[0].topic, acked, began)
        return acked

    def _add_consumed(self, topic: str, acked: int, began: float) -> None:
        self.consumed += acked
        series = self._ok_series.get(topic) or self._ok_series.add(topic)
        series.add(time.monotonic() - began, acked)

    def _count_failed(self, messages: Sequence[MessageExt], count: int | None = None) -> None:
        count = len(messages) if count is None else count
        self.failed += count
        METRICS.inc("rocketmq_client_consume_total", count, group=self.group,
                    topic=messages[0].topic, result="failed")  # fmt: skip

    def _call(self, presented: list[ReceivedMessage[Any]]) -> Awaitable[None]:
        if self.batch_handler is not None:
            return cast("Callable[[list[ReceivedMessage[Any]]], Awaitable[None]]",
                        self.batch_handler)(presented)  # fmt: skip
        if self.handler is not None:
            # one message per call: a consume_batch_size above 1 needs a batch_handler (checked
            # when the consumer is built), so a per-message handler never gets more
            (message,) = presented
            return self.handler(message)
        assert self.deliveries is not None
        return self.deliveries.deliver(presented)


class _Reraise(enum.Enum):
    RERAISE = enum.auto()


#: what :meth:`Dispatcher._ended_by` answers for an exception that goes on
_RERAISE = _Reraise.RERAISE

# (module globals: cheaper to read than an Enum's attribute, once per handler call)
_ACK = Outcome.ACK
_SUCCESS, _FAILED, _TIME_OUT = (
    ConsumeReturnType.SUCCESS,
    ConsumeReturnType.FAILED,
    ConsumeReturnType.TIME_OUT,
)


def _resolve(presented: list[ReceivedMessage[Any]], implicit: Outcome) -> None:
    for message in presented:
        if message.settlement is not None:
            message.settlement.resolve(implicit)


#: ``ReceivedMessage.settle_with``, its slot's own setter (no frame of ours a message)
_settle_with = ReceivedMessage.__dict__["_settlement"].__set__


def settled(message: MessageExt) -> Outcome | None:
    """How the application settled ``message`` in its current delivery (None: not yet)."""
    settlement = message.settlement if isinstance(message, ReceivedMessage) else None
    return None if settlement is None else settlement.outcome


def _present(message: MessageExt, namespace: str | None) -> ReceivedMessage[Any]:
    """The message as the application sees it (Java's ``resetRetryAndNamespace``): a retried
    one, which comes from ``%RETRY%<group>``, under its own topic, and the topic without the
    consumer's namespace. (A send-back wraps it again.) One pulled is a ReceivedMessage
    already; one the broker sends to be consumed directly is copied into one."""
    if not isinstance(message, ReceivedMessage):  # (a pulled one is: no call a message)
        message = received(message)
    if message.topic.startswith("%RETRY%"):  # (properties are parsed only then)
        original = message.properties.get(Property.RETRY_TOPIC)
        if original:
            message.topic = original
    if namespace:
        message.topic = unwrap(namespace, message.topic)
    return message
