"""OpenTelemetry spans for sends and consumes, after the messaging semantic conventions, with the
trace context carried in message properties (W3C ``traceparent`` / ``tracestate``).

Opt in with ``Producer(tracing=True)`` / ``PushConsumer(tracing=True)`` and the ``otel`` extra
(the OpenTelemetry API only; the application installs and configures the SDK). Without the
API installed, asking for tracing is an error at construction, not a silent no-op.

* ``send <topic>`` (PRODUCER): messaging.system=rocketmq, messaging.destination.name,
  messaging.operation.type=send, messaging.rocketmq.client_group,
  messaging.rocketmq.message.tag / .keys / .type, and messaging.message.id once sent;
* ``process <topic>`` (CONSUMER): messaging.system, messaging.destination.name,
  messaging.operation.type=process, messaging.consumer.group.name, messaging.message.id,
  messaging.rocketmq.message.tag / .keys / .reconsume_times.

A consumer's ``process`` span is a child of the context the producer injected, so one trace
runs from the send to the handler (and to a retry's handler).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import attrs

from rocketmq_actors._version import __version__
from rocketmq_actors.protocol.messages import Message
from rocketmq_actors.protocol.records import MessageExt

__all__ = ["Tracing"]


def _message_type(message: Message) -> str:
    if message.delay_level or message.deliver_at_ms is not None or message.delay_ms is not None:
        return "delay"
    return "normal"


class Tracing:
    """Spans of one producer or consumer (group)."""

    def __init__(self, group: str) -> None:
        # imported here, not with the module: loading the API (and its propagators) is start-up
        # work every producer and consumer would pay without tracing
        try:
            from opentelemetry import propagate, trace
            from opentelemetry.trace import SpanKind, Status, StatusCode
        except ImportError:
            raise RuntimeError(
                "tracing needs the OpenTelemetry API: pip install 'rocketmq-actors[otel]'"
            ) from None
        self.group = group
        self._propagate, self._trace = propagate, trace
        self._kinds = SpanKind
        self._status = Status, StatusCode
        self._tracer = trace.get_tracer("rocketmq_actors", __version__)

    def start_send(self, message: Message, *, ordered: bool) -> tuple[Any, Message]:
        """A started (not current) ``send`` span, and the message with its context injected."""
        attributes: dict[str, Any] = {
            "messaging.system": "rocketmq",
            "messaging.destination.name": message.topic,
            "messaging.operation.type": "send",
            "messaging.operation.name": "send",
            "messaging.rocketmq.client_group": self.group,
            "messaging.rocketmq.message.type": "fifo" if ordered else _message_type(message),
        }
        if message.tags:
            attributes["messaging.rocketmq.message.tag"] = message.tags
        if message.keys:
            attributes["messaging.rocketmq.message.keys"] = list(message.keys)
        span = self._tracer.start_span(
            f"send {message.topic}", kind=self._kinds.PRODUCER, attributes=attributes
        )
        carrier: dict[str, str] = {}
        self._propagate.inject(carrier, context=self._trace.set_span_in_context(span))
        if carrier:
            message = attrs.evolve(message, properties={**message.properties, **carrier})
        return span, message

    def end_send(self, span: Any, msg_id: str | None, error: BaseException | None) -> None:
        if msg_id:
            span.set_attribute("messaging.message.id", msg_id)
        if error is not None:
            status, code = self._status
            span.record_exception(error)
            span.set_status(status(code.ERROR, type(error).__name__))
        span.end()

    @contextmanager
    def process(self, message: MessageExt) -> Iterator[Any]:
        """The ``process`` span around a handler call, child of the sender's context."""
        properties: Mapping[str, str] = message.properties
        parent = self._propagate.extract(dict(properties))
        attributes: dict[str, Any] = {
            "messaging.system": "rocketmq",
            "messaging.destination.name": message.topic,
            "messaging.operation.type": "process",
            "messaging.operation.name": "process",
            "messaging.consumer.group.name": self.group,
            "messaging.message.id": message.msg_id,
            "messaging.rocketmq.message.reconsume_times": message.reconsume_times,
        }
        if message.tags:
            attributes["messaging.rocketmq.message.tag"] = message.tags
        if message.keys:
            attributes["messaging.rocketmq.message.keys"] = list(message.keys)
        with self._tracer.start_as_current_span(
            f"process {message.topic}", context=parent, kind=self._kinds.CONSUMER,
            attributes=attributes, record_exception=True, set_status_on_exception=True,
        ) as span:  # fmt: skip
            yield span
