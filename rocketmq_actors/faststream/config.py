"""The configuration a RocketMQ broker (and each router on it) gives its subscribers and
publishers: FastStream's :class:`BrokerConfig` plus where the cluster is and how to reach it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from faststream._internal.configs import BrokerConfig

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.producer import Producer

from .producer import RocketMQFastProducer

__all__ = ["RocketMQBrokerConfig"]


@dataclass(kw_only=True)
class RocketMQBrokerConfig(BrokerConfig):
    producer: RocketMQFastProducer = field(default_factory=RocketMQFastProducer)
    #: None: the NAMESRV_ADDR environment variable, as every client of ours reads it
    namesrv: str | Sequence[str] | None = None
    #: the namespace of the producer and every consumer
    namespace: str | None = None
    #: keyword arguments of the broker's ClientInstance (ssl_context, credentials, ...)
    client_options: dict[str, Any] = field(default_factory=dict)
    #: the ClientInstance the producer and every consumer share while the broker is connected
    instance: ClientInstance | None = None

    def connect(self, producer: Producer) -> None:
        self.instance = producer.instance
        self.producer.connect(producer, self.fd_config._serializer)

    def disconnect(self) -> None:
        self.instance = None
        self.producer.disconnect()
