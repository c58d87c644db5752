"""The RocketMQ 5.x clients' metrics, under their names, units and buckets, so that a Grafana
dashboard built for the Java or Go client (``rocketmq-clients``) reads ours.

Opt in with ``ClientOptions(client_metrics=True)``: the client then records, beside its own
``rocketmq_client_*`` series (:mod:`rocketmq_actors.metrics`), into the same registry (read by
its Prometheus collector) and, when the OpenTelemetry API is installed, through the
OpenTelemetry metrics API (meter ``rocketmq_actors``; the application configures the SDK):

``rocketmq_send_cost_time`` (a send, refused ones included), ``rocketmq_delivery_latency``
(from a message's store to its arrival here), ``rocketmq_await_time`` (from its arrival to its
handler call), ``rocketmq_process_time`` (a handler call, per message): histograms in
milliseconds; ``rocketmq_consumer_cached_messages`` / ``_bytes``: a push consumer's cache, per
topic, every ``persist_interval``. docs/operations.md has their labels.

``invocation_status`` is ``success`` or ``failure``; the buckets are the Java client's
(``HistogramEnum``). A POP consumer has no cache gauges. The hooks are the client's own
(:mod:`rocketmq_actors.hooks`): every send and handler call then makes its hook context.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from rocketmq_actors._version import __version__
from rocketmq_actors.hooks import ConsumeContext, SendContext
from rocketmq_actors.logs import get_logger
from rocketmq_actors.metrics import BUCKETS_OF, METRICS, Metrics
from rocketmq_actors.names import unwrap
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.messages import Message

__all__ = ["ClientMetrics", "client_metrics"]

log = get_logger("rocketmq_actors.consumer")

SEND_COST_TIME = "rocketmq_send_cost_time"
DELIVERY_LATENCY = "rocketmq_delivery_latency"
AWAIT_TIME = "rocketmq_await_time"
PROCESS_TIME = "rocketmq_process_time"
CACHED_MESSAGES = "rocketmq_consumer_cached_messages"
CACHED_BYTES = "rocketmq_consumer_cached_bytes"


class CachedQueue(Protocol):
    """A push consumer's process queue, as the cache gauges read it."""

    @property
    def queue(self) -> MessageQueue: ...
    @property
    def count(self) -> int: ...
    @property
    def cached_bytes(self) -> int: ...


def _status(ok: bool) -> str:
    return "success" if ok else "failure"


class ClientMetrics:
    """The send and consume hook that records them for one client (``group``: a consumer's;
    None for a producer, whose series have no group)."""

    def __init__(
        self,
        client_id: str,
        *,
        group: str | None = None,
        namespace: str | None = None,
        metrics: Metrics = METRICS,
    ) -> None:
        self.client_id = client_id
        self.group = unwrap(namespace, group) if group is not None else None
        self.namespace = namespace
        self.metrics = metrics
        self._otel = _OtelInstruments.create()
        self._reported: set[str] = set()  # the topics whose cache gauges were set

    def _record(self, name: str, value: float, **labels: str) -> None:
        self.metrics.observe(name, value, **labels)
        if self._otel is not None:
            self._otel.record(name, value, labels)

    # ---- sends --------------------------------------------------------------------------

    def before_send(self, context: SendContext) -> None:
        pass

    def after_send(self, context: SendContext) -> None:
        elapsed_ms = (context.elapsed or 0.0) * 1000
        status = _status(context.error is None)
        first = context.message  # (a batch's messages share its topic)
        if not (isinstance(first, Message) and isinstance(first.topic, str)):
            return  # (refused as no message: nothing to label it with)
        count = len(context.messages) if context.messages is not None else 1
        labels = {"topic": unwrap(self.namespace, first.topic), "client_id": self.client_id,
                  "invocation_status": status}  # fmt: skip
        for _ in range(count):  # (one value per message, as Java records them)
            self._record(SEND_COST_TIME, elapsed_ms, **labels)

    # ---- handler calls ------------------------------------------------------------------

    def _consumer_labels(self, topic: str) -> dict[str, str]:
        return {"topic": topic, "consumer_group": self.group or "", "client_id": self.client_id}

    def before_consume(self, context: ConsumeContext) -> None:
        first = context.messages[0]
        arrived = getattr(first, "arrived_ms", 0)
        if not arrived:  # (a message the broker sent to be consumed directly)
            return
        labels = self._consumer_labels(first.topic)
        now = time.time_ns() // 1_000_000
        self._record(AWAIT_TIME, max(0, now - arrived), **labels)
        if first.store_timestamp > 0:
            self._record(DELIVERY_LATENCY, max(0, arrived - first.store_timestamp), **labels)

    def after_consume(self, context: ConsumeContext) -> None:
        elapsed_ms = (context.elapsed or 0.0) * 1000
        status = _status(bool(context.success))
        labels = self._consumer_labels(context.messages[0].topic)  # (one queue's: one topic)
        for _ in context.messages:  # (one value per message, as Java records them)
            self._record(PROCESS_TIME, elapsed_ms, **labels, invocation_status=status)

    # ---- a push consumer's cache --------------------------------------------------------

    def cached(self, by_topic: Mapping[str, tuple[int, int]]) -> None:
        """Set the cache gauges: topic -> (messages, bytes); a topic gone is dropped."""
        current = {unwrap(self.namespace, topic): cached for topic, cached in by_topic.items()}
        for name in (CACHED_MESSAGES, CACHED_BYTES):
            self.metrics.remove_gauges(
                name, lambda labels: labels["topic"] in current,
                consumer_group=self.group or "", client_id=self.client_id,
            )  # fmt: skip
        if self._otel is not None:  # (its gauges keep their last value: gone is 0)
            for topic in self._reported - current.keys():
                self._otel.gauge(CACHED_MESSAGES, 0, self._consumer_labels(topic))
                self._otel.gauge(CACHED_BYTES, 0, self._consumer_labels(topic))
        self._reported = set(current)
        for topic, (count, size) in current.items():
            labels = self._consumer_labels(topic)
            self.metrics.set(CACHED_MESSAGES, count, **labels)
            self.metrics.set(CACHED_BYTES, size, **labels)
            if self._otel is not None:
                self._otel.gauge(CACHED_MESSAGES, count, labels)
                self._otel.gauge(CACHED_BYTES, size, labels)

    def cached_queues(self, queues: Iterable[CachedQueue]) -> None:
        """Set the cache gauges from a push consumer's process queues (a failure is logged:
        its caller is the offset persister)."""
        by_topic: dict[str, tuple[int, int]] = {}
        for pq in queues:
            count, size = by_topic.get(pq.queue.topic, (0, 0))
            by_topic[pq.queue.topic] = (count + pq.count, size + pq.cached_bytes)
        try:
            self.cached(by_topic)
        except Exception:
            log.exception("consumer.metrics_failed", group=self.group)

    def forget(self) -> None:
        """Drop the gauges (the consumer stopped; OpenTelemetry's go to 0)."""
        self.cached({})


def client_metrics(client: Any, member: Any) -> ClientMetrics | None:
    """A consumer's metrics hook, if its ``ClientOptions`` ask for them (``member``: the
    consumer's group member, with ``group`` and ``instance``)."""
    if not client.client_metrics:
        return None
    return ClientMetrics(member.instance.client_id, group=member.group,
                         namespace=client.namespace)  # fmt: skip


class _OtelInstruments:
    """The same series through the OpenTelemetry metrics API (a no-op meter unless the
    application configured the SDK)."""

    def __init__(self, meter: Any) -> None:
        self._histograms: dict[str, Any] = {}
        self._gauges: dict[str, Any] = {}
        for name, bounds in BUCKETS_OF.items():
            try:
                self._histograms[name] = meter.create_histogram(
                    name, unit="ms", explicit_bucket_boundaries_advisory=list(bounds)
                )
            except TypeError:  # an API before 1.30: no bucket advice (an SDK view gives them)
                self._histograms[name] = meter.create_histogram(name, unit="ms")
        if hasattr(meter, "create_gauge"):  # (a synchronous gauge: API 1.23 and later)
            for name in (CACHED_MESSAGES, CACHED_BYTES):
                gauge = meter.create_gauge(name, unit="By" if "bytes" in name else "1")
                if gauge is not None:  # (a meter without them warns and gives None)
                    self._gauges[name] = gauge

    @classmethod
    def create(cls) -> _OtelInstruments | None:
        try:
            from opentelemetry import metrics
        except ImportError:  # (the Prometheus series alone)
            return None
        return cls(metrics.get_meter("rocketmq_actors", __version__))

    def record(self, name: str, value: float, labels: Mapping[str, str]) -> None:
        self._histograms[name].record(value, attributes=labels)

    def gauge(self, name: str, value: float, labels: Mapping[str, str]) -> None:
        gauge = self._gauges.get(name)
        if gauge is not None:
            gauge.set(value, attributes=labels)
