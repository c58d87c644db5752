"""``RocketMQTelemetryMiddleware``: FastStream's :class:`TelemetryMiddleware` with RocketMQ's
settings provider, as ``KafkaTelemetryMiddleware`` is Kafka's."""

from __future__ import annotations

from typing import TYPE_CHECKING

from faststream.opentelemetry.middleware import TelemetryMiddleware

from ..response import RocketMQPublishCommand
from .provider import telemetry_attributes_provider_factory

if TYPE_CHECKING:
    from opentelemetry.metrics import Meter, MeterProvider
    from opentelemetry.trace import TracerProvider

__all__ = ["RocketMQTelemetryMiddleware"]


class RocketMQTelemetryMiddleware(TelemetryMiddleware[RocketMQPublishCommand]):
    """Spans (``<topic> publish`` / ``<topic> process``, the trace context carried in the
    message's properties) and the ``messaging.publish.duration`` / ``messaging.process.duration``
    histograms (and message counters) of a RocketMQ broker's publishes, requests and consumes."""

    def __init__(
        self,
        *,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        meter: Meter | None = None,
        include_messages_counters: bool = True,
    ) -> None:
        super().__init__(
            settings_provider_factory=telemetry_attributes_provider_factory,
            tracer_provider=tracer_provider,
            meter_provider=meter_provider,
            meter=meter,
            include_messages_counters=include_messages_counters,
        )
