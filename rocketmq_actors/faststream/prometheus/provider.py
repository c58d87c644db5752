"""What FastStream's Prometheus metrics say of a RocketMQ message: the topic (the ``handler``
label of a consume, the ``destination`` label of a publish), the body's size, one message."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from faststream.message import StreamMessage

from rocketmq_actors.consumer.core.message import ReceivedMessage

from ..response import RocketMQPublishCommand

if TYPE_CHECKING:
    from faststream.prometheus import ConsumeAttrs

__all__ = ["RocketMQMetricsSettingsProvider", "settings_provider_factory"]


class RocketMQMetricsSettingsProvider:
    """FastStream's ``MetricsSettingsProvider`` for RocketMQ."""

    __slots__ = ("messaging_system",)

    def __init__(self) -> None:
        self.messaging_system = "rocketmq"

    def get_consume_attrs_from_message(
        self, msg: StreamMessage[ReceivedMessage[Any]]
    ) -> ConsumeAttrs:
        return {
            "destination_name": msg.raw_message.topic,
            "message_size": len(msg.raw_message.body),
            "messages_count": 1,
        }

    def get_publish_destination_name_from_cmd(self, cmd: RocketMQPublishCommand) -> str:
        return cmd.destination


def settings_provider_factory(msg: ReceivedMessage[Any] | None) -> RocketMQMetricsSettingsProvider:
    """One provider for every RocketMQ message (there is no batch consume here)."""
    return RocketMQMetricsSettingsProvider()
