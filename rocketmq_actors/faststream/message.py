"""The FastStream message of a RocketMQ delivery, and the parser that makes it.

``ack`` / ``nack`` / ``reject`` settle the delivery the push consumer gave the handler (see
:mod:`rocketmq_actors.consumer.core.settlement`): ack is consume success, ``nack(delay=...)`` is
reconsume later (the delay as ``message.nack`` takes it: seconds, a ``timedelta`` or a
``DelayLevel``; None: the subscriber's ``retry_delay_level``), ``reject`` sends the message to
``%DLQ%<group>`` at once. ``raise NackMessage(delay=30)`` inside a handler passes the delay on.

Headers are the message's user properties (the client's own, TAGS, KEYS, UNIQ_KEY..., are not
headers: the message's fields say them). FastStream's content type, correlation id and reply
topic travel as the user properties ``content-type``, ``correlation_id`` and ``reply_to``, the
names FastStream's Kafka broker gives its headers. A RocketMQ request (``broker.request``,
``Producer.request`` or a Java client's) has as ``reply_to`` the topic its reply goes to,
``<CLUSTER>_REPLY_TOPIC`` (:mod:`.rpc`); the reply ``request`` returns is a
:class:`RocketMQReplyMessage`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from faststream.message import SourceType, StreamMessage, decode_message

from rocketmq_actors.consumer.core.message import ReceivedMessage
from rocketmq_actors.consumer.core.settlement import Delay
from rocketmq_actors.protocol.events import ReplyMessage
from rocketmq_actors.protocol.messages import Property, user_properties

from .rpc import is_request, reply_topic_of

__all__ = [
    "CONTENT_TYPE",
    "CORRELATION_ID",
    "REPLY_TO",
    "RocketMQMessage",
    "RocketMQParser",
    "RocketMQReplyMessage",
    "user_headers",
]

CONTENT_TYPE = "content-type"
CORRELATION_ID = "correlation_id"
REPLY_TO = "reply_to"


def user_headers(properties: Mapping[str, str]) -> dict[str, str]:
    """The user properties of a message: its properties less the ones the client manages."""
    return user_properties(properties)


class RocketMQMessage(StreamMessage[ReceivedMessage[Any]]):
    """A RocketMQ message as FastStream handlers see it; ``raw_message`` is the
    :class:`~rocketmq_actors.consumer.message.ReceivedMessage` (topic, tags, keys, queue,
    reconsume count...); ``group`` is the consumer group of the subscriber that got it."""

    def __init__(self, *args: Any, group: str = "", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.group = group

    async def ack(self) -> None:
        if self.committed is None and not self.raw_message.settled:
            self.raw_message.ack()
        await super().ack()

    async def nack(self, delay: Delay | None = None) -> None:
        """Consume it again later: after ``delay`` (the subscriber's retry level if None); an
        orderly subscriber suspends the queue for it (at most 30 s) instead."""
        if self.committed is None and not self.raw_message.settled:
            self.raw_message.nack(delay)
        await super().nack()

    async def reject(self) -> None:
        """Dead letter: to ``%DLQ%<group>`` at once, not consumed again."""
        if self.committed is None and not self.raw_message.settled:
            self.raw_message.nack(requeue=False)
        await super().reject()


class RocketMQReplyMessage(StreamMessage[ReplyMessage]):
    """The reply ``broker.request`` / ``publisher.request`` returns (``await msg.decode()``);
    ``raw_message`` is the :class:`~rocketmq_actors.protocol.events.ReplyMessage`. Nothing to
    settle: ``ack`` and the like only mark it."""


class RocketMQParser:
    """Raw message -> :class:`RocketMQMessage` (a reply: :class:`RocketMQReplyMessage`), and
    its body -> the handler's argument. ``group``: the subscriber's consumer group."""

    __slots__ = ("group",)

    def __init__(self, group: str = "") -> None:
        self.group = group

    async def parse_message(
        self, message: ReceivedMessage[Any] | ReplyMessage
    ) -> RocketMQMessage | RocketMQReplyMessage:
        properties = message.properties
        headers = user_headers(properties)
        if isinstance(message, ReplyMessage):
            return RocketMQReplyMessage(
                raw_message=message,
                body=message.body,
                headers=headers,
                content_type=headers.get(CONTENT_TYPE),
                correlation_id=headers.get(CORRELATION_ID),
                message_id=properties.get(Property.UNIQ_KEY) or None,
                source_type=SourceType.RESPONSE,
            )
        reply_to = reply_topic_of(properties) if is_request(properties) else ""
        return RocketMQMessage(
            raw_message=message,
            body=message.body,
            headers=headers,
            content_type=headers.get(CONTENT_TYPE),
            correlation_id=headers.get(CORRELATION_ID),
            reply_to=reply_to or headers.get(REPLY_TO, ""),
            message_id=message.msg_id,
            group=self.group,
        )

    @staticmethod
    async def decode_message(message: StreamMessage[Any]) -> Any:
        return decode_message(message)
