"""FastStream's OpenTelemetry middleware for RocketMQ (``faststream.kafka.opentelemetry``'s
shape): spans and metrics of every publish, request and consume, with RocketMQ's attributes.

    from rocketmq_actors.faststream.opentelemetry import RocketMQTelemetryMiddleware

    broker = RocketMQBroker(middlewares=[RocketMQTelemetryMiddleware(tracer_provider=provider)])

Needs the OpenTelemetry API and its semantic conventions (the ``otel`` extra): without them
the import raises :class:`~rocketmq_actors.extras.MissingExtra`. See docs/faststream.md."""

from __future__ import annotations

from rocketmq_actors.extras import require

# FastStream's middleware imports both; name the extra that brings them
require("opentelemetry.trace", extra="otel", purpose="RocketMQTelemetryMiddleware")
require("opentelemetry.semconv.trace", extra="otel", purpose="RocketMQTelemetryMiddleware")

from .middleware import RocketMQTelemetryMiddleware  # noqa: E402
from .provider import RocketMQTelemetrySettingsProvider  # noqa: E402

__all__ = ["RocketMQTelemetryMiddleware", "RocketMQTelemetrySettingsProvider"]
