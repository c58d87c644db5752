"""FastStream's request/response on RocketMQ's request-reply protocol (docs/request-reply.md).

``broker.request(body, topic)`` sends the message with
:meth:`~rocketmq_actors.producer.Producer.request` (it carries ``CORRELATION_ID``,
``REPLY_TO_CLIENT`` and ``TTL``; the broker adds ``CLUSTER``). A subscriber that receives such
a message answers it with its handler's return value, sent as RocketMQ's reply
(``SEND_REPLY_MESSAGE_V2`` to ``<CLUSTER>_REPLY_TOPIC``, pushed by the broker to the requester)
with the FastStream properties a publish carries (content type, correlation id, headers), so
the requester decodes it as it would a consumed message. Either side may be a plain client of
this library or a Java one.

No reply within the timeout: :class:`RequestTimeoutError`, which is both the client's
:class:`~rocketmq_actors.errors.ReplyTimeout` and the builtin :class:`TimeoutError` that
FastStream's other brokers raise from ``request``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from rocketmq_actors.errors import InvalidMessage, ReplyTimeout
from rocketmq_actors.producer.producer import Producer
from rocketmq_actors.producer.requestreply import is_request, reply, reply_properties
from rocketmq_actors.producer.requestreply import reply_topic as _reply_topic
from rocketmq_actors.protocol.events import ReplyMessage
from rocketmq_actors.protocol.messages import (
    RESERVED_PROPERTIES,
    Message,
    Property,
)

__all__ = [
    "RequestTimeoutError",
    "is_request",
    "memory_reply",
    "reply_topic_of",
    "send_reply",
]


class RequestTimeoutError(ReplyTimeout, TimeoutError):
    """``broker.request`` / ``publisher.request``: no reply within the timeout. A
    :class:`~rocketmq_actors.errors.ReplyTimeout` (``topic``, ``correlation_id``, ``sent``) and
    the builtin ``TimeoutError`` FastStream's brokers raise (``except TimeoutError`` catches
    both)."""

    @classmethod
    def of(cls, error: ReplyTimeout) -> RequestTimeoutError:
        return cls(error.topic, error.correlation_id, error.timeout, sent=error.sent)


def reply_topic_of(properties: Mapping[str, str]) -> str:
    """Where the reply to a request goes: ``<CLUSTER>_REPLY_TOPIC``."""
    return _reply_topic(properties[Property.CLUSTER])


def _reply_props(request: Mapping[str, str], message: Message) -> tuple[str, dict[str, str]]:
    """The reply's topic and properties: the handler's (content type, correlation id,
    headers) and the ones RocketMQ's reply needs (:func:`reply_properties`)."""
    user = dict(message.properties)
    if clash := sorted(set(user) & RESERVED_PROPERTIES):
        raise InvalidMessage(f"headers may not be named like client properties: {clash}")
    topic, props = reply_properties(request)
    return topic, {**user, **props}


async def send_reply(
    producer: Producer, request: Any, message: Message, *, timeout: float | None = None
) -> None:
    """Send ``message``'s body and properties as the reply to ``request`` (a received request),
    through ``producer``'s connections: :func:`~rocketmq_actors.producer.requestreply.reply`,
    with the FastStream properties too. :class:`~rocketmq_actors.errors.BrokerError` when
    the broker could not push it (the requester gave up, or is gone)."""
    # (a body that is not bytes: reply refuses it, typed)
    await reply(producer, request, message.body, timeout=timeout, properties=message.properties)


def memory_reply(request: Mapping[str, str], message: Message) -> ReplyMessage:
    """The reply the requester would get for ``message`` (the in-memory test broker's)."""
    topic, props = _reply_props(request, message)
    assert isinstance(message.body, bytes)
    now = time.time_ns() // 1_000_000
    return ReplyMessage(topic=topic, body=message.body, properties=props, born_timestamp=now,
                        store_timestamp=now)  # fmt: skip
