"""A POP consumer's options, checked when it is built: every wrong value a
:class:`~rocketmq_actors.errors.ConfigError` naming the option, before any I/O."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rocketmq_actors.consumer.core.options import ConsumeFrom, check_deserializer
from rocketmq_actors.errors import ConfigError
from rocketmq_actors.names import validate_group, validate_topic
from rocketmq_actors.runtime.checks import check_int, check_timeout

__all__ = ["MAX_INVISIBLE_TIME", "MAX_POP_BATCH", "check_pop_options"]

#: PopMessageProcessor refuses a POP of more than 32 messages
MAX_POP_BATCH = 32
#: the longest invisible time accepted here: 12 hours, as the 5.x proxy's
#: ProxyConfig.maxInvisibleTimeMills (Java's push consumer in pop mode keeps 5-300 s)
MAX_INVISIBLE_TIME = 12 * 3600.0

#: the shortest long poll allowed (Java's push consumer in POP mode holds 15 s)
MIN_POLL_TIME = 1.0

_COUNTS = ("concurrency", "consume_batch_size", "max_cached_messages", "ack_batch_size")
_PERIODS = ("suspend_delay", "ack_interval", "route_interval", "request_timeout")


def check_pop_options(options: Mapping[str, Any]) -> None:
    """Check a POP consumer's keyword arguments (those it was given, by name)."""
    validate_group(options["group"])
    subscriptions = options["subscriptions"]
    if not isinstance(subscriptions, Mapping) or not subscriptions:
        raise ConfigError("subscriptions must map at least one topic to an expression")
    for topic in subscriptions:
        validate_topic(topic, error=ConfigError)
        if topic.startswith(("%RETRY%", "%DLQ%")):
            raise ConfigError(f"subscriptions: {topic!r} is a retry or dead-letter topic")
    for name in _COUNTS:  # (before any comparison below: a wrong type is a ConfigError)
        check_int(name, options[name])
    if options["handler"] is not None and options["batch_handler"] is not None:
        raise ConfigError("give handler or batch_handler, not both")
    if options["consume_batch_size"] > 1 and options["batch_handler"] is None:
        raise ConfigError("consume_batch_size > 1 needs a batch_handler")
    if options["orderly"] and options["batch_handler"] is not None:
        raise ConfigError("orderly=True consumes one message at a time: give a handler")
    if options["sync_handler"] and options["handler"] is None and options["batch_handler"] is None:
        raise ConfigError("sync_handler=True needs a handler or a batch_handler")
    check_deserializer(options["value_deserializer"])
    check_int("pop_batch_size", options["pop_batch_size"], maximum=MAX_POP_BATCH)
    if options["max_reconsume_times"] is not None:
        check_int("max_reconsume_times", options["max_reconsume_times"], minimum=0)
    invisible = check_timeout("invisible_time", options["invisible_time"])
    if not 1.0 <= invisible <= MAX_INVISIBLE_TIME:
        raise ConfigError(f"invisible_time must be 1 s to 12 h, not {invisible} s")
    # a broker answers a POP with no poll time at once: a popper would loop without pause
    if check_timeout("poll_time", options["poll_time"]) < MIN_POLL_TIME:
        raise ConfigError(
            f"poll_time must be at least {MIN_POLL_TIME} s, not {options['poll_time']}"
        )
    for name in ("consume_timeout", "retry_delay"):
        if options[name] is not None:
            check_timeout(name, options[name], allow_zero=name == "retry_delay")
    for name in _PERIODS:
        check_timeout(name, options[name])
    if not isinstance(options["orderly"], bool):
        raise ConfigError(f"orderly must be a bool, not {options['orderly']!r}")
    consume_from = options["consume_from"]
    if not isinstance(consume_from, ConsumeFrom) or consume_from is ConsumeFrom.TIMESTAMP:
        raise ConfigError(
            "consume_from must be ConsumeFrom.LAST_OFFSET or FIRST_OFFSET (a POP starts a "
            f"queue at its first or last message), not {consume_from!r}"
        )
