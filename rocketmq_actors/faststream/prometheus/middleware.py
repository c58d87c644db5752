"""``RocketMQPrometheusMiddleware``: FastStream's :class:`PrometheusMiddleware` with RocketMQ's
settings provider, as ``KafkaPrometheusMiddleware`` is Kafka's."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from faststream._internal.constants import EMPTY
from faststream.prometheus.middleware import PrometheusMiddleware

from rocketmq_actors.consumer.core.message import ReceivedMessage

from ..response import RocketMQPublishCommand
from .provider import settings_provider_factory

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

__all__ = ["RocketMQPrometheusMiddleware"]


class RocketMQPrometheusMiddleware(
    PrometheusMiddleware[ReceivedMessage[Any], RocketMQPublishCommand]
):
    """FastStream's received / processed / published message metrics in ``registry``
    (names prefixed ``metrics_prefix``), labelled ``app_name``, ``broker`` (``rocketmq``),
    ``handler`` or ``destination`` (the topic) and ``custom_labels``."""

    def __init__(
        self,
        *,
        registry: CollectorRegistry,
        app_name: str = EMPTY,
        metrics_prefix: str = "faststream",
        received_messages_size_buckets: Sequence[float] | None = None,
        custom_labels: dict[str, str | Callable[[Any], str]] | None = None,
    ) -> None:
        super().__init__(
            settings_provider_factory=settings_provider_factory,
            registry=registry,
            app_name=app_name,
            metrics_prefix=metrics_prefix,
            received_messages_size_buckets=received_messages_size_buckets,
            custom_labels=custom_labels,
        )
