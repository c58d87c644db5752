"""OpenTelemetry spans for sends and consumes, after the messaging semantic conventions for
RocketMQ (https://opentelemetry.io/docs/specs/semconv/messaging/rocketmq/, semconv 1.44), with
the trace context carried in message properties (W3C ``traceparent`` / ``tracestate``).

Opt in with ``Producer(tracing=True)`` / ``PushConsumer(client=ClientOptions(tracing=True))``
and the ``otel`` extra (the OpenTelemetry API only; the application installs and configures the
SDK). Without the API installed, asking for tracing raises
:class:`~rocketmq_actors.extras.MissingExtra` at construction, not a silent no-op.

Every span: ``messaging.system=rocketmq``, ``messaging.operation.name`` and ``.type``,
``messaging.rocketmq.namespace`` ("" without a namespace), ``messaging.client.id``, and, once
the broker is known, ``server.address`` / ``server.port``; a failed operation ``error.type``
(the exception's qualified class name) and an error status.

* ``send <topic>`` (PRODUCER): ``messaging.destination.name``,
  ``messaging.rocketmq.client_group`` (the producer group: deprecated in the registry, which
  has no replacement for producer spans), ``messaging.rocketmq.message.type`` / ``.tag`` /
  ``.keys``, ``.group`` (the sharding key of an ordered send), ``.delay_time_level`` or
  ``.delivery_timestamp`` (a delay message), and ``messaging.message.id`` once sent. A
  ``send_batch`` is one span with ``messaging.batch.message_count``, whose context every message
  of the batch carries.
* ``process <topic>`` (CONSUMER): ``messaging.destination.name``,
  ``messaging.consumer.group.name``, ``messaging.rocketmq.consumption_model``,
  ``messaging.message.id`` (one message) or ``messaging.batch.message_count`` (a batch
  handler's call), ``.tag`` / ``.keys``.

* ``receive <topic>`` (CONSUMER): a ``PullConsumer.getmany`` / ``getone`` that returned
  messages of the topic, from the call to its return: ``messaging.destination.name``,
  ``messaging.consumer.group.name``, ``messaging.message.id`` and ``.body.size`` (one message)
  or ``messaging.batch.message_count``, and a link to each message's producer context.

A consumer's ``process`` span is a child of the context the producer injected, so one trace
runs from the send to the handler (and to a retry's handler).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from rocketmq_actors._version import __version__
from rocketmq_actors.extras import require
from rocketmq_actors.hooks import ConsumeContext, SendContext
from rocketmq_actors.names import unwrap
from rocketmq_actors.protocol.errors import ProtocolError
from rocketmq_actors.protocol.messages import Message, decode_offset_msg_id
from rocketmq_actors.protocol.records import MessageExt

__all__ = ["ProcessSpans", "SendSpans", "Tracing", "error_type", "server_attributes"]


def error_type(error: BaseException) -> str:
    """``error.type``: the exception's canonical class name (low cardinality, as the
    convention asks), ``rocketmq_actors.errors.SendFailed`` say."""
    kind = type(error)
    return f"{kind.__module__}.{kind.__qualname__}"


def server_attributes(host: str) -> dict[str, Any]:
    """``server.address`` / ``server.port`` of ``ip:port`` (``[v6]:port``)."""
    address, _, port = host.rpartition(":")
    if not address or not port.isdigit():
        return {}
    return {"server.address": address.strip("[]"), "server.port": int(port)}


def _sent_to(result: Any) -> dict[str, Any]:
    # the broker's store host is in the offset message id (Java's MessageDecoder.decodeMessageId)
    try:
        host, _ = decode_offset_msg_id(result.offset_msg_id)
    except (AttributeError, ProtocolError):
        return {}
    return server_attributes(host)


def _message_attributes(message: Message) -> dict[str, Any]:
    attributes: dict[str, Any] = {}
    if message.tags:
        attributes["messaging.rocketmq.message.tag"] = message.tags
    if message.keys:
        attributes["messaging.rocketmq.message.keys"] = list(message.keys)
    if message.delay_level:
        attributes["messaging.rocketmq.message.delay_time_level"] = message.delay_level
    elif message.deliver_at_ms is not None:
        attributes["messaging.rocketmq.message.delivery_timestamp"] = message.deliver_at_ms
    elif isinstance(message.delay_ms, int):  # (a wrong type: validation names it)
        attributes["messaging.rocketmq.message.delivery_timestamp"] = (
            time.time_ns() // 1_000_000 + message.delay_ms
        )
    return attributes


def _message_type(message: Message) -> str:
    if message.delay_level or message.deliver_at_ms is not None or message.delay_ms is not None:
        return "delay"
    return "normal"


class Tracing:
    """Spans of one producer or consumer (group)."""

    def __init__(
        self,
        group: str,
        *,
        namespace: str | None = None,
        client_id: str | None = None,
        model: str | None = None,
    ) -> None:
        # imported here, not with the module: loading the API (and its propagators) is start-up
        # work every producer and consumer would pay without tracing
        require("opentelemetry.trace", extra="otel", purpose="tracing")
        from opentelemetry import context, propagate, trace
        from opentelemetry.trace import SpanKind, Status, StatusCode

        self.group = unwrap(namespace, group)
        self._common: dict[str, Any] = {
            "messaging.system": "rocketmq",
            "messaging.rocketmq.namespace": namespace or "",
        }
        if client_id:
            self._common["messaging.client.id"] = client_id
        self._model = model
        self._propagate, self._trace, self._context = propagate, trace, context
        self._kinds = SpanKind
        self._status = Status, StatusCode
        self._tracer = trace.get_tracer("rocketmq_actors", __version__)

    def _inject(self, span: Any, message: Message) -> Message:
        carrier: dict[str, str] = {}
        self._propagate.inject(carrier, context=self._trace.set_span_in_context(span))
        if carrier and isinstance(message.properties, Mapping):  # (else validation names it)
            message = attrs.evolve(message, properties={**message.properties, **carrier})
        return message

    def _send_span(self, topic: str, attributes: dict[str, Any]) -> Any:
        attributes = {
            **self._common,
            "messaging.destination.name": topic,
            "messaging.operation.type": "send",
            "messaging.operation.name": "send",
            "messaging.rocketmq.client_group": self.group,
            **attributes,
        }
        return self._tracer.start_span(
            f"send {topic}", kind=self._kinds.PRODUCER, attributes=attributes
        )

    def start_send(
        self, message: Message, *, ordered: bool, message_group: str | None = None
    ) -> tuple[Any, Message]:
        """A started (not current) ``send`` span, and the message with its context injected;
        ``message_group`` is an ordered send's sharding key."""
        attributes = _message_attributes(message)
        attributes["messaging.rocketmq.message.type"] = (
            "fifo" if ordered else _message_type(message)
        )
        if ordered and message_group is not None:
            attributes["messaging.rocketmq.message.group"] = message_group
        if isinstance(message.body, bytes | bytearray):  # (a value: serialized after this)
            attributes["messaging.message.body.size"] = len(message.body)
        span = self._send_span(message.topic, attributes)
        try:
            return span, self._inject(span, message)
        except BaseException as exc:  # the caller never gets the span to end
            self.end_send(span, None, exc)
            raise

    def start_batch(self, messages: Sequence[Message]) -> tuple[Any, list[Message]]:
        """One ``send`` span for a ``send_batch`` (one topic), and the messages, each carrying
        its context."""
        attributes: dict[str, Any] = {"messaging.batch.message_count": len(messages)}
        if messages and all(_message_type(m) == "normal" for m in messages):
            attributes["messaging.rocketmq.message.type"] = "normal"
        span = self._send_span(messages[0].topic if messages else "", attributes)
        return span, [self._inject(span, m) for m in messages]

    def end_send(
        self, span: Any, result: Any, error: BaseException | None, *, batch: bool = False
    ) -> None:
        """End a send span: ``result`` is the :class:`SendResult` (a batch's first, or only
        its message id as a string, or None), ``error`` what the send raised."""
        if result is not None:
            if isinstance(result, str):
                msg_id: str | None = result
            else:
                msg_id = result.msg_id
                span.set_attributes(_sent_to(result))
            if msg_id and not batch:
                span.set_attribute("messaging.message.id", msg_id)
        if error is not None:
            self._fail(span, error)
        span.end()

    def _fail(self, span: Any, error: BaseException) -> None:
        status, code = self._status
        span.set_attribute("error.type", error_type(error))
        span.record_exception(error)
        span.set_status(status(code.ERROR, type(error).__name__))

    def _consumer_attributes(self, first: MessageExt, operation: str, count: int) -> dict[str, Any]:
        """What a consumer span of ``count`` messages (``first`` first) says of them."""
        attributes: dict[str, Any] = {
            **self._common,
            "messaging.destination.name": first.topic,
            "messaging.operation.type": operation,
            "messaging.operation.name": operation,
            "messaging.consumer.group.name": self.group,
            **server_attributes(first.store_host),
        }
        if count == 1:
            attributes["messaging.message.id"] = first.msg_id
            attributes["messaging.message.body.size"] = len(first.body)
        else:
            attributes["messaging.batch.message_count"] = count
        return attributes

    def received(self, messages: Sequence[MessageExt], started_ns: int) -> None:
        """A ``receive`` span of a poll that returned ``messages`` (one topic), from
        ``started_ns`` (``time.time_ns()``) to now, linked to each message's producer."""
        first = messages[0]
        attributes = self._consumer_attributes(first, "receive", len(messages))
        links = []
        for message in messages:
            context = self._trace.get_current_span(
                self._propagate.extract(dict(message.properties))
            ).get_span_context()
            if context.is_valid:
                links.append(self._trace.Link(context))
        span = self._tracer.start_span(
            f"receive {first.topic}", kind=self._kinds.CONSUMER, attributes=attributes,
            links=links, start_time=started_ns,
        )  # fmt: skip
        span.end()

    def start_process(self, message: MessageExt, *, count: int = 1) -> tuple[Any, Any]:
        """The ``process`` span of a handler call (of ``count`` messages, ``message`` first),
        child of the sender's context, made current; and the token :meth:`end_process` takes
        to restore the context (in the same task)."""
        properties: Mapping[str, str] = message.properties
        parent = self._propagate.extract(dict(properties))
        attributes = self._consumer_attributes(message, "process", count)
        if self._model:
            attributes["messaging.rocketmq.consumption_model"] = self._model
        if message.tags:
            attributes["messaging.rocketmq.message.tag"] = message.tags
        if message.keys:
            attributes["messaging.rocketmq.message.keys"] = list(message.keys)
        span = self._tracer.start_span(
            f"process {message.topic}", context=parent, kind=self._kinds.CONSUMER,
            attributes=attributes,
        )  # fmt: skip
        return span, self._context.attach(self._trace.set_span_in_context(span))

    def end_process(self, span: Any, token: Any, error: BaseException | None) -> None:
        self._context.detach(token)
        if error is not None:
            self._fail(span, error)
        span.end()


#: where the client's own hooks keep their values in a context's ``props``
_SPAN = "rocketmq_actors.span"


@attrs.frozen
class ProcessSpans:
    """The consume hook that makes the ``process`` spans (:mod:`rocketmq_actors.hooks`)."""

    tracing: Tracing

    def before_consume(self, context: ConsumeContext) -> None:
        messages = context.messages
        context.props[_SPAN] = self.tracing.start_process(messages[0], count=len(messages))

    def after_consume(self, context: ConsumeContext) -> None:
        started = context.props.pop(_SPAN, None)
        if started is not None:
            span, token = started
            self.tracing.end_process(span, token, context.error)


@attrs.frozen
class SendSpans:
    """The send hook that makes the ``send`` spans and injects their context into the
    messages (:mod:`rocketmq_actors.hooks`)."""

    tracing: Tracing

    def before_send(self, context: SendContext) -> None:
        if context.mode == "batch":
            if not context.messages:
                return
            span, traced = self.tracing.start_batch(context.messages)
            context.messages = traced
        elif isinstance(context.message, Message):  # (else the send refuses it: no span)
            span, context.message = self.tracing.start_send(
                context.message, ordered=context.ordered, message_group=context.sharding_key
            )
        else:
            return
        context.props[_SPAN] = span

    def after_send(self, context: SendContext) -> None:
        span = context.props.pop(_SPAN, None)
        if span is None:
            return
        result, batch = context.result, context.mode == "batch"
        if batch:
            result = result[0] if result else None
        self.tracing.end_send(span, result, context.error, batch=batch)
