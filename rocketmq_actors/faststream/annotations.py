"""Handler parameter annotations, FastStream's style (``faststream.kafka.annotations``):
``message: RocketMQMessage`` gets the message being consumed, ``broker: RocketMQBroker`` the
broker, ``producer: Producer`` the broker's running :class:`~rocketmq_actors.producer.Producer`."""

from __future__ import annotations

from typing import Annotated

from faststream import Context
from faststream.annotations import ContextRepo, Logger

from rocketmq_actors.producer import Producer as _Producer

from .broker import RocketMQBroker as _Broker
from .message import RocketMQMessage as _Message

__all__ = ["ContextRepo", "Logger", "Producer", "RocketMQBroker", "RocketMQMessage"]

RocketMQMessage = Annotated[_Message, Context("message")]
RocketMQBroker = Annotated[_Broker, Context("broker")]
Producer = Annotated[_Producer, Context("broker._connection")]
