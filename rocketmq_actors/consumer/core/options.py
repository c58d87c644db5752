"""A push consumer's options: the enums, and the checks made when the consumer is built (every
wrong value a :class:`~rocketmq_actors.errors.ConfigError` naming the option, before any I/O)."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

from rocketmq_actors.consumer.core.strategies import as_allocator
from rocketmq_actors.errors import ConfigError
from rocketmq_actors.names import validate_group, validate_topic
from rocketmq_actors.runtime.checks import check_int, check_timeout

__all__ = [
    "ConsumeFrom",
    "MessageModel",
    "check_deserializer",
    "check_push_options",
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


_COUNTS = (
    "concurrency",
    "pull_batch_size",
    "max_cached_messages",
    "consume_batch_size",
    "max_cached_bytes",
    "max_span",
)
_PERIODS = (
    "local_retry_delay",
    "suspend_delay",
    "pull_suspend",
    "rebalance_interval",
    "lock_interval",
    "persist_interval",
    "request_timeout",
)


def check_push_options(options: Mapping[str, Any]) -> None:
    """Check a push consumer's keyword arguments (those it was given, by name)."""
    validate_group(options["group"])
    subscriptions = options["subscriptions"]
    if not isinstance(subscriptions, Mapping) or not subscriptions:
        raise ConfigError("subscriptions must map at least one topic to an expression")
    for topic in subscriptions:
        validate_topic(topic, error=ConfigError)
    if options["handler"] is not None and options["batch_handler"] is not None:
        raise ConfigError("give handler or batch_handler, not both")
    if options["consume_batch_size"] > 1 and options["batch_handler"] is None:
        raise ConfigError("consume_batch_size > 1 needs a batch_handler")
    if options["sync_handler"] and options["handler"] is None and options["batch_handler"] is None:
        raise ConfigError("sync_handler=True needs a handler or a batch_handler")
    check_deserializer(options["value_deserializer"])
    for name in _COUNTS:
        check_int(name, options[name])
    check_int("retry_delay_level", options["retry_delay_level"], minimum=-1, maximum=18)
    if options["max_reconsume_times"] is not None:
        check_int("max_reconsume_times", options["max_reconsume_times"], minimum=0)
    if options["consume_timeout"] is not None:
        check_timeout("consume_timeout", options["consume_timeout"])
    for name in _PERIODS:
        check_timeout(name, options[name])
    for name, kind in (("model", MessageModel), ("consume_from", ConsumeFrom)):
        if not isinstance(options[name], kind):
            raise ConfigError(f"{name} must be a {kind.__name__}, not {options[name]!r}")
    as_allocator(options["strategy"])  # a Strategy or a callable (.strategies)


def check_deserializer(value: object) -> None:
    if value is not None and not callable(value):
        raise ConfigError(f"value_deserializer must be a callable of bytes, not {value!r}")


def max_reconsume_times(given: int | None, orderly: bool) -> int:
    """A consumer's ``max_reconsume_times``: as given, else Java's default - 16 in concurrent
    mode, unbounded (``Integer.MAX_VALUE``) in orderly mode."""
    if given is not None:
        return given
    return 2**31 - 1 if orderly else 16
