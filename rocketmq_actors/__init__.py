"""rocketmq-actors: an asyncio client for Apache RocketMQ's remoting protocol.

Everything a user calls imports from here::

    from rocketmq_actors import ClientOptions, Message, Producer, PushConsumer

The names are loaded on first use (PEP 562): ``import rocketmq_actors`` alone costs little, and
a process that only needs one part (a Spark worker, the launcher's watchdog) imports only that.
docs/usage.md shows each; docs/names.md maps aiokafka's and the Java client's names to them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__

#: public name -> the module that defines it
_EXPORTS: dict[str, str] = {
    # clients and their options
    "ClientOptions": "rocketmq_actors.cluster.options",
    "ClientInstance": "rocketmq_actors.cluster.instance",
    "Producer": "rocketmq_actors.producer",
    "ProducerOptions": "rocketmq_actors.producer",
    "TransactionProducer": "rocketmq_actors.producer",
    "BlockingProducer": "rocketmq_actors.blocking",
    "PushConsumer": "rocketmq_actors.consumer.push",
    "PushOptions": "rocketmq_actors.consumer.push",
    "PullConsumer": "rocketmq_actors.consumer.pull",
    "PullOptions": "rocketmq_actors.consumer.pull",
    "PopConsumer": "rocketmq_actors.consumer.pop",
    "PopOptions": "rocketmq_actors.consumer.pop",
    "create_topic": "rocketmq_actors.producer",
    # messages, results and the consumers' types
    "Message": "rocketmq_actors.producer",
    "CompressionType": "rocketmq_actors.producer",
    "SendResult": "rocketmq_actors.producer",
    "SendStatus": "rocketmq_actors.producer",
    "SendFuture": "rocketmq_actors.producer",
    "BatchResults": "rocketmq_actors.producer",
    "FlushResult": "rocketmq_actors.producer",
    "RecallResult": "rocketmq_actors.producer",
    "LocalTransactionState": "rocketmq_actors.producer",
    "TransactionOutcome": "rocketmq_actors.producer",
    "QueueSelector": "rocketmq_actors.producer",
    "select_by_key": "rocketmq_actors.producer",
    "ReceivedMessage": "rocketmq_actors.consumer.core.message",
    "RecordDeserializationError": "rocketmq_actors.consumer.core.message",
    "MessageExt": "rocketmq_actors.protocol.records",
    "MessageQueue": "rocketmq_actors.protocol.bodies",
    "ReplyMessage": "rocketmq_actors.protocol.events",
    "MessageSelector": "rocketmq_actors.consumer.core.subscriptions",
    "ConsumeFrom": "rocketmq_actors.consumer.core.options",
    "MessageModel": "rocketmq_actors.consumer.core.options",
    "OffsetReset": "rocketmq_actors.consumer.pull",
    "RebalanceListener": "rocketmq_actors.consumer.pull",
    "Strategy": "rocketmq_actors.consumer.core.rebalance",
    "MachineRoomNearby": "rocketmq_actors.consumer.core.strategies",
    "ByMachineRoom": "rocketmq_actors.consumer.core.strategies",
    "ByConfig": "rocketmq_actors.consumer.core.strategies",
    "AclCredentials": "rocketmq_actors.protocol.acl",
    "Health": "rocketmq_actors.cluster.health",
    "SendHook": "rocketmq_actors.hooks",
    "SendContext": "rocketmq_actors.hooks",
    "ConsumeHook": "rocketmq_actors.hooks",
    "ConsumeContext": "rocketmq_actors.hooks",
    # errors
    "RocketMQError": "rocketmq_actors.errors",
    "ConfigError": "rocketmq_actors.errors",
    "ClientStateError": "rocketmq_actors.errors",
    "ClientNotStarted": "rocketmq_actors.errors",
    "ClientClosed": "rocketmq_actors.errors",
    "StartupFailed": "rocketmq_actors.errors",
    "ConnectError": "rocketmq_actors.errors",
    "ConnectionLost": "rocketmq_actors.errors",
    "RequestTimeout": "rocketmq_actors.errors",
    "ReplyTimeout": "rocketmq_actors.errors",
    "WriteTimeout": "rocketmq_actors.errors",
    "NameServerUnavailable": "rocketmq_actors.errors",
    "BrokerError": "rocketmq_actors.errors",
    "AccessDenied": "rocketmq_actors.errors",
    "TopicNotFound": "rocketmq_actors.errors",
    "InvalidMessage": "rocketmq_actors.errors",
    "UnsupportedByBroker": "rocketmq_actors.errors",
    "SendFailed": "rocketmq_actors.errors",
    "ProducerBusy": "rocketmq_actors.errors",
    "SupervisorGaveUp": "rocketmq_actors.errors",
    "InternalError": "rocketmq_actors.errors",
    "ProtocolError": "rocketmq_actors.errors",
    "AllocationFailed": "rocketmq_actors.errors",
    "InvalidRecallHandle": "rocketmq_actors.errors",
    "InvalidSubscription": "rocketmq_actors.errors",
    "RecallDisabled": "rocketmq_actors.errors",
    "RecallFailed": "rocketmq_actors.errors",
    "RecallTooLate": "rocketmq_actors.errors",
    "WrongEventLoop": "rocketmq_actors.errors",
    "MissingExtra": "rocketmq_actors.extras",
    "DelayLevel": "rocketmq_actors.consumer.core.settlement",
    "MessageAlreadySettled": "rocketmq_actors.consumer.core.settlement",
    "SettlementNotSupported": "rocketmq_actors.consumer.core.settlement",
}

__all__ = [
    "AccessDenied",
    "AclCredentials",
    "AllocationFailed",
    "BatchResults",
    "BlockingProducer",
    "BrokerError",
    "ByConfig",
    "ByMachineRoom",
    "ClientClosed",
    "ClientInstance",
    "ClientNotStarted",
    "ClientOptions",
    "ClientStateError",
    "CompressionType",
    "ConfigError",
    "ConnectError",
    "ConnectionLost",
    "ConsumeContext",
    "ConsumeFrom",
    "ConsumeHook",
    "DelayLevel",
    "FlushResult",
    "Health",
    "InternalError",
    "InvalidMessage",
    "InvalidRecallHandle",
    "InvalidSubscription",
    "LocalTransactionState",
    "MachineRoomNearby",
    "Message",
    "MessageAlreadySettled",
    "MessageExt",
    "MessageModel",
    "MessageQueue",
    "MessageSelector",
    "MissingExtra",
    "NameServerUnavailable",
    "OffsetReset",
    "PopConsumer",
    "PopOptions",
    "Producer",
    "ProducerBusy",
    "ProducerOptions",
    "ProtocolError",
    "PullConsumer",
    "PullOptions",
    "PushConsumer",
    "PushOptions",
    "QueueSelector",
    "RebalanceListener",
    "RecallDisabled",
    "RecallFailed",
    "RecallResult",
    "RecallTooLate",
    "ReceivedMessage",
    "RecordDeserializationError",
    "ReplyMessage",
    "ReplyTimeout",
    "RequestTimeout",
    "RocketMQError",
    "SendContext",
    "SendFailed",
    "SendFuture",
    "SendHook",
    "SendResult",
    "SendStatus",
    "SettlementNotSupported",
    "StartupFailed",
    "Strategy",
    "SupervisorGaveUp",
    "TopicNotFound",
    "TransactionOutcome",
    "TransactionProducer",
    "UnsupportedByBroker",
    "WriteTimeout",
    "WrongEventLoop",
    "__version__",
    "create_topic",
    "select_by_key",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'rocketmq_actors' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # (once: the next lookup is a plain global)
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


if TYPE_CHECKING:  # what type checkers and editors see: the same names, imported eagerly
    from rocketmq_actors.blocking import BlockingProducer
    from rocketmq_actors.cluster.health import Health
    from rocketmq_actors.cluster.instance import ClientInstance
    from rocketmq_actors.cluster.options import ClientOptions
    from rocketmq_actors.consumer.core.message import ReceivedMessage, RecordDeserializationError
    from rocketmq_actors.consumer.core.options import ConsumeFrom, MessageModel
    from rocketmq_actors.consumer.core.rebalance import Strategy
    from rocketmq_actors.consumer.core.settlement import (
        DelayLevel,
        MessageAlreadySettled,
        SettlementNotSupported,
    )
    from rocketmq_actors.consumer.core.strategies import ByConfig, ByMachineRoom, MachineRoomNearby
    from rocketmq_actors.consumer.core.subscriptions import MessageSelector
    from rocketmq_actors.consumer.pop import PopConsumer, PopOptions
    from rocketmq_actors.consumer.pull import (
        OffsetReset,
        PullConsumer,
        PullOptions,
        RebalanceListener,
    )
    from rocketmq_actors.consumer.push import PushConsumer, PushOptions
    from rocketmq_actors.errors import (
        AccessDenied,
        AllocationFailed,
        BrokerError,
        ClientClosed,
        ClientNotStarted,
        ClientStateError,
        ConfigError,
        ConnectError,
        ConnectionLost,
        InternalError,
        InvalidMessage,
        InvalidRecallHandle,
        InvalidSubscription,
        NameServerUnavailable,
        ProducerBusy,
        ProtocolError,
        RecallDisabled,
        RecallFailed,
        RecallTooLate,
        ReplyTimeout,
        RequestTimeout,
        RocketMQError,
        SendFailed,
        StartupFailed,
        SupervisorGaveUp,
        TopicNotFound,
        UnsupportedByBroker,
        WriteTimeout,
        WrongEventLoop,
    )
    from rocketmq_actors.extras import MissingExtra
    from rocketmq_actors.hooks import ConsumeContext, ConsumeHook, SendContext, SendHook
    from rocketmq_actors.producer import (
        BatchResults,
        CompressionType,
        FlushResult,
        LocalTransactionState,
        Message,
        Producer,
        ProducerOptions,
        QueueSelector,
        RecallResult,
        SendFuture,
        SendResult,
        SendStatus,
        TransactionOutcome,
        TransactionProducer,
        create_topic,
        select_by_key,
    )
    from rocketmq_actors.protocol.acl import AclCredentials
    from rocketmq_actors.protocol.bodies import MessageQueue
    from rocketmq_actors.protocol.events import ReplyMessage
    from rocketmq_actors.protocol.records import MessageExt
