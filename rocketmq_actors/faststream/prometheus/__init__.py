"""FastStream's Prometheus middleware for RocketMQ (``faststream.kafka.prometheus``'s shape):
FastStream's metrics (``faststream_received_messages_total``,
``faststream_published_messages_total``, ...) of a RocketMQ broker, labelled ``broker``
``rocketmq`` and ``handler`` / ``destination`` the topic.

    from prometheus_client import CollectorRegistry
    from rocketmq_actors.faststream.prometheus import RocketMQPrometheusMiddleware

    broker = RocketMQBroker(middlewares=[RocketMQPrometheusMiddleware(registry=registry)])

Needs ``prometheus_client`` (the ``prometheus`` extra): without it the import raises
:class:`~rocketmq_actors.extras.MissingExtra`. See docs/faststream.md."""

from __future__ import annotations

from rocketmq_actors.extras import require

require("prometheus_client", purpose="RocketMQPrometheusMiddleware")

from .middleware import RocketMQPrometheusMiddleware  # noqa: E402
from .provider import RocketMQMetricsSettingsProvider  # noqa: E402

__all__ = ["RocketMQMetricsSettingsProvider", "RocketMQPrometheusMiddleware"]
