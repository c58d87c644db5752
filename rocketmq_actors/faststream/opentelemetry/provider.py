"""The span attributes of RocketMQ messages, after the messaging semantic conventions for
RocketMQ (the names :mod:`rocketmq_actors.tracing` uses too).

A consume (``<topic> process``): ``messaging.system`` ``rocketmq``,
``messaging.destination.name`` and FastStream's ``messaging.destination_publish.name`` (the
topic), ``messaging.consumer.group.name`` (the subscriber's group), ``messaging.message.id``
(the message id, ``UNIQ_KEY``), ``messaging.message.conversation_id`` (FastStream's
correlation id), ``messaging.message.body.size``, and ``messaging.rocketmq.message.tag`` /
``.keys`` when the message has them. A publish or request (``<topic> publish``): the system, the
topic, the correlation id, the tag, the keys, ``messaging.rocketmq.message.type`` (``normal``,
``delay``, or ``fifo`` with a sharding key, which is ``messaging.rocketmq.message.group``) and
``messaging.rocketmq.message.delay_time_level``.
"""

from __future__ import annotations

from typing import Any

from faststream.message import StreamMessage

from rocketmq_actors.consumer.core.settlement import delay_level
from rocketmq_actors.errors import ConfigError

from ..response import RocketMQPublishCommand

__all__ = ["RocketMQTelemetrySettingsProvider", "telemetry_attributes_provider_factory"]

SYSTEM = "rocketmq"


def _message_attributes(tags: str | None, keys: Any) -> dict[str, Any]:
    attrs: dict[str, Any] = {}
    if tags:
        attrs["messaging.rocketmq.message.tag"] = tags
    if keys:
        attrs["messaging.rocketmq.message.keys"] = list(keys)
    return attrs


class RocketMQTelemetrySettingsProvider:
    """FastStream's ``TelemetrySettingsProvider`` for RocketMQ messages (a consumed
    ``ReceivedMessage``, or the ``ReplyMessage`` a request returned)."""

    __slots__ = ("messaging_system",)

    def __init__(self) -> None:
        self.messaging_system = SYSTEM

    def get_consume_attrs_from_message(self, msg: StreamMessage[Any]) -> dict[str, Any]:
        raw = msg.raw_message
        attrs: dict[str, Any] = {
            "messaging.system": self.messaging_system,
            "messaging.destination.name": raw.topic,
            "messaging.destination_publish.name": raw.topic,
            "messaging.message.id": msg.message_id,
            "messaging.message.conversation_id": msg.correlation_id,
            "messaging.message.body.size": len(raw.body),
        }
        if group := getattr(msg, "group", ""):
            attrs["messaging.consumer.group.name"] = group
        attrs.update(_message_attributes(getattr(raw, "tags", None), getattr(raw, "keys", ())))
        return attrs

    def get_consume_destination_name(self, msg: StreamMessage[Any]) -> str:
        topic: str = msg.raw_message.topic
        return topic

    def get_publish_attrs_from_cmd(self, cmd: RocketMQPublishCommand) -> dict[str, Any]:
        attrs: dict[str, Any] = {
            "messaging.system": self.messaging_system,
            "messaging.destination.name": cmd.destination,
            "messaging.message.conversation_id": cmd.correlation_id,
            **_message_attributes(cmd.tags, cmd.keys),
        }
        kind = "normal"
        if cmd.delay is not None:
            try:
                attrs["messaging.rocketmq.message.delay_time_level"] = delay_level(cmd.delay)
                kind = "delay"
            except ConfigError:
                pass  # the send refuses it, with this error
        if cmd.sharding_key is not None:
            attrs["messaging.rocketmq.message.group"] = cmd.sharding_key
            kind = "fifo"
        attrs["messaging.rocketmq.message.type"] = kind
        return attrs

    def get_publish_destination_name(self, cmd: RocketMQPublishCommand) -> str:
        return cmd.destination


def telemetry_attributes_provider_factory(msg: Any) -> RocketMQTelemetrySettingsProvider:
    """One provider for every RocketMQ message (there is no batch consume here)."""
    return RocketMQTelemetrySettingsProvider()
