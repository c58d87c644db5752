"""The trace hooks: what a send, a transaction's end and a handler call write as trace records.

Java: ``SendMessageTraceHookImpl`` (Pub, after the broker's answer; none when the answer has
no region, a broker with tracing switched off), ``EndTransactionTraceHookImpl``
(EndTransaction), ``ConsumeMessageTraceHookImpl`` (SubBefore before the handler, SubAfter with
its cost and outcome after it; a message whose ``TRACE_ON`` property is ``false`` is not
traced). Group and topic names are written without the client's namespace, as Java's
``NamespaceUtil.withoutNamespace``. Every hook is a plain function: it builds records and
appends them to the dispatcher, which never waits.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from typing import Protocol

import attrs

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.errors import ConfigError
from rocketmq_actors.hooks import ConsumeContext, SendContext
from rocketmq_actors.names import unwrap, validate_topic, wrap
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.messages import Message, Property, UniqueIdGenerator
from rocketmq_actors.protocol.records import MessageExt
from rocketmq_actors.protocol.trace import (
    DEFAULT_REGION,
    RMQ_SYS_TRACE_TOPIC,
    ConsumeReturnType,
    EndTransactionRecord,
    PubRecord,
    SubAfterRecord,
    SubBeforeRecord,
    TraceMessageType,
)
from rocketmq_actors.runtime.netinfo import local_ipv4

from .dispatcher import SendFactory, TraceDispatcher, now_ms

#: where these hooks keep their values in a hook context's ``props``
_CALL = "rocketmq_actors.trace"

__all__ = [
    "ConsumeCall",
    "ConsumeTrace",
    "SendTrace",
    "Sent",
    "for_consumer",
    "for_producer",
    "now_ms",
    "trace_topic",
]


def trace_topic(trace: object, topic: object) -> str | None:
    """The trace topic a client's ``trace``/``trace_topic`` options ask for (None: no trace),
    checked: ``trace`` a bool, ``trace_topic`` a valid topic name (it turns tracing on)."""
    if not isinstance(trace, bool):
        raise ConfigError(f"trace must be True or False, not {trace!r}")
    if topic is None:
        return RMQ_SYS_TRACE_TOPIC if trace else None
    if not isinstance(topic, str):
        raise ConfigError(f"trace_topic must be a topic name (str), not {type(topic).__name__}")
    try:
        validate_topic(topic, error=ConfigError)
    except ConfigError as exc:
        raise ConfigError(f"trace_topic: {exc}") from None
    return topic


def _keys(keys: Sequence[str]) -> str | None:
    return " ".join(keys) if keys else None  # Message.getKeys(): the keys joined by spaces


def _msg_type(message: Message, half: bool) -> TraceMessageType:
    # DefaultMQProducerImpl.sendKernelImpl: half for a prepared transaction message, delay for
    # a delay level or a delivery time, normal otherwise
    if half:
        return TraceMessageType.TRANS_HALF
    if message.delay_level or message.deliver_at_ms is not None or message.delay_ms is not None:
        return TraceMessageType.DELAY
    return TraceMessageType.NORMAL


class Sent(Protocol):
    """What a Pub record reads of a send's result (the producer's ``SendResult``)."""

    @property
    def status(self) -> enum.Enum: ...  # its value: Java's SendStatus name
    @property
    def msg_id(self) -> str: ...
    @property
    def offset_msg_id(self) -> str: ...
    @property
    def queue(self) -> MessageQueue: ...
    @property
    def region_id(self) -> str | None: ...
    @property
    def trace_on(self) -> bool: ...


@attrs.define
class SendTrace:
    """A producer's hooks. ``store_host(topic, broker_name)`` is the broker address a send
    went to (from the producer's cached route)."""

    dispatcher: TraceDispatcher
    group: str
    namespace: str | None
    store_host: Callable[[str, str], str | None]

    def pub(
        self, message: Message, result: Sent | None, started_ms: int, *, half: bool = False
    ) -> None:
        """After a send's answer (None, a failure, writes nothing, as Java's hook has no
        result then)."""
        if result is None or result.region_id is None or not result.trace_on:
            return
        now = now_ms()
        body = message.body if isinstance(message.body, bytes) else b""
        self.dispatcher.append(
            PubRecord(
                timestamp=started_ms,
                region_id=result.region_id,
                group=unwrap(self.namespace, self.group),
                topic=result.queue.topic,
                msg_id=result.msg_id,
                tags=message.tags,
                keys=_keys(message.keys),
                store_host=self.store_host(result.queue.topic, result.queue.broker_name) or "",
                body_length=len(body),
                cost_ms=now - started_ms,
                msg_type=_msg_type(message, half),
                offset_msg_id=result.offset_msg_id,
                success=result.status.value == "SEND_OK",
            )
        )

    def before_send(self, context: SendContext) -> None:
        """As a send hook (:mod:`rocketmq_actors.hooks`): when the send began."""
        context.props[_CALL] = now_ms()

    def after_send(self, context: SendContext) -> None:
        """A Pub record once a single send (``send``, ``submit``, ``send_nowait``) stored
        its message (a batch or a oneway send writes none, as Java's hook has no result)."""
        started = context.props.pop(_CALL, None)
        if started is not None and context.error is None and context.mode in ("sync", "async"):
            self.pub(context.message, context.result, started)

    def end_transaction(
        self,
        *,
        topic: str,
        msg_id: str,
        tags: str | None,
        keys: Sequence[str],
        store_host: str | None,
        transaction_id: str | None,
        state: str,
        from_check: bool,
        region_id: str | None = None,
    ) -> None:
        """After END_TRANSACTION went to the broker (``state``: Java's LocalTransactionState
        name)."""
        self.dispatcher.append(
            EndTransactionRecord(
                timestamp=now_ms(),
                region_id=region_id or DEFAULT_REGION,
                group=unwrap(self.namespace, self.group),
                topic=unwrap(self.namespace, topic),
                msg_id=msg_id,
                tags=tags,
                keys=_keys(keys),
                store_host=store_host or "",
                transaction_id=transaction_id,
                transaction_state=state,
                from_check=from_check,
            )
        )


@attrs.define
class ConsumeCall:
    """One handler call's SubBefore, for its SubAfter."""

    request_id: str
    started_ms: int
    messages: list[MessageExt]
    region_id: str


@attrs.define
class ConsumeTrace:
    """A push consumer's hooks."""

    dispatcher: TraceDispatcher
    group: str
    namespace: str | None
    ids: UniqueIdGenerator = attrs.field(
        factory=lambda: UniqueIdGenerator(ip=bytes(int(p) for p in local_ipv4().split(".")))
    )

    def before(self, messages: Sequence[MessageExt]) -> ConsumeCall | None:
        """Before the handler: a SubBefore per traced message (None: none is traced)."""
        traced = [m for m in messages if m.properties.get(Property.TRACE_ON) != "false"]
        if not traced:
            return None
        call = ConsumeCall(
            request_id=self.ids.next_id(), started_ms=now_ms(), messages=traced,
            region_id=traced[-1].properties.get(Property.MSG_REGION) or DEFAULT_REGION,
        )  # fmt: skip
        group = unwrap(self.namespace, self.group)
        for message in traced:
            self.dispatcher.append(
                SubBeforeRecord(
                    timestamp=call.started_ms,
                    region_id=call.region_id,
                    group=group,
                    request_id=call.request_id,
                    msg_id=message.msg_id,
                    retry_times=message.reconsume_times,
                    keys=_keys(message.keys),
                    topic=message.topic,
                )
            )
        return call

    def before_consume(self, context: ConsumeContext) -> None:
        """As a consume hook (:mod:`rocketmq_actors.hooks`): the SubBefore records."""
        call = self.before(context.messages)
        if call is not None:
            context.props[_CALL] = call

    def after_consume(self, context: ConsumeContext) -> None:
        """The SubAfter records, with the call's outcome."""
        call = context.props.pop(_CALL, None)
        if call is not None:
            status = ConsumeReturnType[context.status or "TIME_OUT"]
            self.after(call, status, len(context.messages))

    def polled(self, messages: Sequence[MessageExt]) -> None:
        """A pull consumer's records handed to the application: SubBefore and SubAfter at once,
        success (Java's DefaultLitePullConsumerImpl.poll runs both hooks there)."""
        call = self.before(messages)
        if call is not None:
            self.after(call, ConsumeReturnType.SUCCESS, len(messages))

    def after(self, call: ConsumeCall, outcome: ConsumeReturnType, count: int) -> None:
        """After the handler (``count``: the messages of the call; the cost is per message,
        as Java divides it)."""
        now = now_ms()
        cost = (now - call.started_ms) // max(count, 1)
        group = unwrap(self.namespace, self.group)
        for message in call.messages:
            self.dispatcher.append(
                SubAfterRecord(
                    request_id=call.request_id,
                    msg_id=message.msg_id,
                    cost_ms=cost,
                    success=outcome is ConsumeReturnType.SUCCESS,
                    keys=_keys(message.keys),
                    context_code=int(outcome),
                    timestamp=now,
                    group=group,
                    topic=message.topic,
                )
            )


def _store_host(
    instance: ClientInstance, namespace: str | None
) -> Callable[[str, str], str | None]:
    def store_host(topic: str, broker_name: str) -> str | None:
        route = instance.routes.cached(wrap(namespace, topic))
        return None if route is None else route.master_addr(broker_name)

    return store_host


def for_producer(
    instance: ClientInstance,
    group: str,
    namespace: str | None,
    trace: object,
    topic: object,
    *,
    sender: SendFactory,
) -> SendTrace | None:
    """A producer's hooks and dispatcher, if its options ask for them; ``sender`` makes the
    function that sends the trace messages."""
    name = trace_topic(trace, topic)
    if name is None:
        return None
    send = sender(instance, group=group, kind="PRODUCER")
    dispatcher = TraceDispatcher(send, group=group, topic=name)
    return SendTrace(dispatcher, group, namespace, _store_host(instance, namespace))


def for_consumer(
    instance: ClientInstance,
    group: str,
    namespace: str | None,
    trace: object,
    topic: object,
    *,
    sender: SendFactory,
) -> ConsumeTrace | None:
    """A consumer's hooks and dispatcher, if its options ask for them; ``sender`` makes the
    function that sends the trace messages (the producer's ``trace_sender``)."""
    name = trace_topic(trace, topic)
    if name is None:
        return None
    send = sender(instance, group=group, kind="CONSUMER")
    return ConsumeTrace(TraceDispatcher(send, group=group, topic=name), group, namespace)
