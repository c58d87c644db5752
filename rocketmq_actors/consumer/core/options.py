"""What the consumers' options share: the enums, and the checks made when a consumer is built
(every wrong value a :class:`~rocketmq_actors.errors.ConfigError` naming the option, before any
I/O; a push consumer's own options are a :class:`~..push.options.PushOptions`)."""

from __future__ import annotations

import enum

from rocketmq_actors.errors import ConfigError

__all__ = [
    "ConsumeFrom",
    "MessageModel",
    "check_deserializer",
    "max_reconsume_times",
]


class MessageModel(enum.Enum):
    CLUSTERING = "CLUSTERING"
    BROADCASTING = "BROADCASTING"


class ConsumeFrom(enum.Enum):
    """Where a group with no committed offset starts."""

    LAST_OFFSET = "CONSUME_FROM_LAST_OFFSET"
    FIRST_OFFSET = "CONSUME_FROM_FIRST_OFFSET"
    TIMESTAMP = "CONSUME_FROM_TIMESTAMP"


def check_deserializer(value: object) -> None:
    if value is not None and not callable(value):
        raise ConfigError(f"value_deserializer must be a callable of bytes, not {value!r}")


def max_reconsume_times(given: int | None, orderly: bool) -> int:
    """A consumer's ``max_reconsume_times``: as given, else Java's default - 16 in concurrent
    mode, unbounded (``Integer.MAX_VALUE``) in orderly mode."""
    if given is not None:
        return given
    return 2**31 - 1 if orderly else 16
