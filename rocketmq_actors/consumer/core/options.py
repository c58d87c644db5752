"""What the consumers' options share: the enums, and the checks made when a consumer is built
(every wrong value a :class:`~rocketmq_actors.errors.ConfigError` naming the option, before any
I/O; a push consumer's own options are a :class:`~..push.options.PushOptions`)."""

from __future__ import annotations

import enum
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from rocketmq_actors.consumer.core.strategies import as_allocator
from rocketmq_actors.errors import ConfigError

__all__ = [
    "ConsumeFrom",
    "MessageModel",
    "check_deserializer",
    "check_dir",
    "check_strategy",
    "max_reconsume_times",
    "member_of",
]


class MessageModel(enum.Enum):
    """Clustering: the group's members share the queues (each message to one member);
    broadcasting: every member gets every message (offsets kept locally)."""

    CLUSTERING = "CLUSTERING"
    BROADCASTING = "BROADCASTING"


class ConsumeFrom(enum.Enum):
    """Where a group with no committed offset starts."""

    LAST_OFFSET = "CONSUME_FROM_LAST_OFFSET"
    FIRST_OFFSET = "CONSUME_FROM_FIRST_OFFSET"
    TIMESTAMP = "CONSUME_FROM_TIMESTAMP"


def member_of(kind: type[Any]) -> Callable[[Any, attrs.Attribute[Any], Any], None]:
    """Validator: an instance of ``kind`` (an enum's member, say)."""

    def check(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if not isinstance(value, kind):
            raise ConfigError(f"{attribute.name} must be a {kind.__name__}, not {value!r}")

    return check


def check_strategy(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """Validator: a ``Strategy`` or a callable (:mod:`.strategies`)."""
    as_allocator(value)


def check_dir(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """Validator: None or a path."""
    if value is not None and not isinstance(value, str | Path):
        raise ConfigError(f"{attribute.name} must be a path, not {type(value).__name__}")


def check_deserializer(value: object) -> None:
    if value is not None and not callable(value):
        raise ConfigError(f"value_deserializer must be a callable of bytes, not {value!r}")


def max_reconsume_times(given: int | None, orderly: bool) -> int:
    """A consumer's ``max_reconsume_times``: as given, else Java's default - 16 in concurrent
    mode, unbounded (``Integer.MAX_VALUE``) in orderly mode."""
    if given is not None:
        return given
    return 2**31 - 1 if orderly else 16
