"""Value serializers (as aiokafka's ``value_serializer``): a message's ``value`` becomes its
body before any network I/O. ``Message.body`` stays bytes on the wire."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attrs

from rocketmq_actors.errors import InvalidMessage
from rocketmq_actors.protocol.messages import Message

from .prepare import check_message

__all__ = ["Serializer", "serialize", "serialize_all"]

Serializer = Callable[[Any], bytes]


def serialize(message: Message, serializer: Serializer) -> Message:
    """``message`` with ``body = serializer(value)`` when it has a value; unchanged when it has
    none (a body given as bytes is sent as it is). Both a body and a value is an error."""
    value = message.value
    if value is None:
        return message
    body = message.body
    if not isinstance(body, (bytes, bytearray, memoryview)):  # before len(): typed, not TypeError
        raise InvalidMessage(f"the body must be bytes, not {type(body).__name__}")
    if len(body):
        raise InvalidMessage("give the message a body (bytes) or a value, not both")
    try:
        serialized = serializer(value)
    except Exception as exc:
        raise InvalidMessage(
            f"value_serializer failed on the message's value ({type(value).__name__}): {exc!r}"
        ) from exc
    if not isinstance(serialized, (bytes, bytearray, memoryview)):
        raise InvalidMessage(
            f"value_serializer must return bytes, it returned {type(serialized).__name__}"
        )
    return attrs.evolve(message, body=bytes(serialized), value=None)


def serialize_all(messages: Sequence[Message], serializer: Serializer) -> Sequence[Message]:
    """Every message of a batch through :func:`serialize` (the batch as it is when none has a
    value)."""
    if isinstance(messages, Message) or not isinstance(messages, Sequence):
        return messages  # (prepare_batch names the mistake)
    if all(m.__class__ is Message and m.value is None for m in messages):
        return messages
    return [
        serialize(check_message(m, f"message {i} of the batch: "), serializer)
        for i, m in enumerate(messages)
    ]
