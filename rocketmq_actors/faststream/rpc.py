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
from typing import Any, Protocol

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.errors import InvalidMessage, ReplyTimeout
from rocketmq_actors.producer.requestreply import reply, reply_properties
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

#: what a request carries (Java ``MessageUtil.createReplyMessage`` needs all four)
REQUEST_PROPERTIES = (Property.CLUSTER, Property.CORRELATION_ID, Property.REPLY_TO_CLIENT,
                      Property.MESSAGE_TTL)  # fmt: skip


class RequestTimeoutError(ReplyTimeout, TimeoutError):
    """``broker.request`` / ``publisher.request``: no reply within the timeout. A
    :class:`~rocketmq_actors.errors.ReplyTimeout` (``topic``, ``correlation_id``, ``sent``) and
    the builtin ``TimeoutError`` FastStream's brokers raise (``except TimeoutError`` catches
    both)."""

    @classmethod
    def of(cls, error: ReplyTimeout) -> RequestTimeoutError:
        return cls(error.topic, error.correlation_id, error.timeout, sent=error.sent)


def is_request(properties: Mapping[str, str]) -> bool:
    """Whether a received message is a stored request someone waits to be answered."""
    return all(properties.get(name) for name in REQUEST_PROPERTIES)


def reply_topic_of(properties: Mapping[str, str]) -> str:
    """Where the reply to a request goes: ``<CLUSTER>_REPLY_TOPIC``."""
    return _reply_topic(properties[Property.CLUSTER])


class _Member(Protocol):  # the broker's started Producer
    @property
    def instance(self) -> ClientInstance: ...
    @property
    def group(self) -> str: ...


def _reply_props(request: Mapping[str, str], message: Message) -> tuple[str, dict[str, str]]:
    """The reply's topic and properties: the handler's (content type, correlation id,
    headers) and the ones RocketMQ's reply needs (:func:`reply_properties`)."""
    user = dict(message.properties)
    if clash := sorted(set(user) & RESERVED_PROPERTIES):
        raise InvalidMessage(f"headers may not be named like client properties: {clash}")
    topic, props = reply_properties(request)
    return topic, {**user, **props}


async def send_reply(
    producer: _Member, request: Any, message: Message, *, timeout: float | None = None
) -> None:
    """Send ``message``'s body and properties as the reply to ``request`` (a received request),
    through ``producer``'s connections: :func:`~rocketmq_actors.producer.requestreply.reply`,
    with the FastStream properties too. :class:`~rocketmq_actors.errors.BrokerError` when
    the broker could not push it (the requester gave up, or is gone)."""
    _, props = _reply_props(request.properties, message)
    body = message.body
    if not isinstance(body, bytes):
        raise InvalidMessage(f"body must be bytes, not {type(body).__name__}")
    await reply(producer, request, body, timeout=timeout, properties=props)


def memory_reply(request: Mapping[str, str], message: Message) -> ReplyMessage:
    """The reply the requester would get for ``message`` (the in-memory test broker's)."""
    topic, props = _reply_props(request, message)
    assert isinstance(message.body, bytes)
    now = time.time_ns() // 1_000_000
    return ReplyMessage(topic=topic, body=message.body, properties=props, born_timestamp=now,
                        store_timestamp=now)  # fmt: skip
