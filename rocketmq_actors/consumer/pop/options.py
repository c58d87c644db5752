"""A POP consumer's options: :class:`PopOptions`, a frozen value checked when it is built, and
the checks of the constructor's own arguments. Every wrong value is a
:class:`~rocketmq_actors.errors.ConfigError` naming the option, before any I/O.

    consumer = PopConsumer(group="billing", subscriptions={"orders": "*"}, handler=handle,
                           options=PopOptions(invisible_time=120.0, concurrency=8))
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from rocketmq_actors.cluster.options import ClientOptions, count, maybe_seconds, seconds
from rocketmq_actors.consumer.core.options import ConsumeFrom, check_deserializer
from rocketmq_actors.consumer.core.subscriptions import MessageSelector
from rocketmq_actors.errors import ConfigError
from rocketmq_actors.names import validate_group, validate_topic
from rocketmq_actors.protocol.messages import MAX_MESSAGE_SIZE
from rocketmq_actors.runtime.checks import check_timeout

__all__ = ["MAX_INVISIBLE_TIME", "MAX_POP_BATCH", "PopOptions", "check_pop_arguments"]

#: PopMessageProcessor refuses a POP of more than 32 messages
MAX_POP_BATCH = 32
#: the longest invisible time accepted here: 12 hours, as the 5.x proxy's
#: ProxyConfig.maxInvisibleTimeMills (Java's push consumer in pop mode keeps 5-300 s)
MAX_INVISIBLE_TIME = 12 * 3600.0

#: the shortest long poll allowed (Java's push consumer in POP mode holds 15 s)
MIN_POLL_TIME = 1.0


def _check_invisible_time(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    invisible = check_timeout(attribute.name, value)
    if not 1.0 <= invisible <= MAX_INVISIBLE_TIME:
        raise ConfigError(f"invisible_time must be 1 s to 12 h, not {invisible} s")


def _check_poll_time(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    # a broker answers a POP with no poll time at once: a popper would loop without pause
    if check_timeout(attribute.name, value) < MIN_POLL_TIME:
        raise ConfigError(f"poll_time must be at least {MIN_POLL_TIME} s, not {value}")


def _check_orderly(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, bool):
        raise ConfigError(f"orderly must be a bool, not {value!r}")


def _check_consume_from(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, ConsumeFrom) or value is ConsumeFrom.TIMESTAMP:
        raise ConfigError(
            "consume_from must be ConsumeFrom.LAST_OFFSET or FIRST_OFFSET (a POP starts a "
            f"queue at its first or last message), not {value!r}"
        )


def _check_max_reconsume(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None:
        count(minimum=0)(_, attribute, value)


@attrs.frozen(kw_only=True)
class PopOptions:
    """What a POP consumer may tune beside its group, subscriptions and handler (the shared
    settings are :class:`~rocketmq_actors.cluster.options.ClientOptions`). Times in seconds.

    * ``orderly`` (``False``): POP with ``order=true``: each queue in order, one member at a
      time.
    * ``consume_from`` (``ConsumeFrom.LAST_OFFSET``): where a queue the group never popped
      starts, its last message or its first (``FIRST_OFFSET``); ``TIMESTAMP`` is no POP's.
    * ``invisible_time`` (``60.0``): how long a popped message stays hidden from the other
      members before it is delivered again unless acked (1 s to 12 h).
    * ``poll_time`` (``15.0``): long polling, how long a broker holds a POP with nothing to
      give (at least 1 s).
    * ``pop_batch_size`` (``32``): messages per POP (at most 32, the broker's limit).
    * ``concurrency`` (``20``): handlers running at once.
    * ``consume_batch_size`` (``1``): messages per ``batch_handler`` call (1 when orderly).
    * ``max_cached_messages`` (``1000``): popped and not settled yet: popping pauses past it.
    * ``max_reconsume_times`` (``None``): deliveries before ``%DLQ%<group>``: None is 16, or
      unbounded when orderly.
    * ``retry_delay`` (``None``): how long a failed message stays invisible (None: the Java
      client's pop delays by reconsume count, 10 s, 30 s, 1 min, ... 2 h).
    * ``suspend_delay`` (``1.0``): orderly, how long a queue waits after a failure.
    * ``consume_timeout`` (``900.0``): a handler running longer is cancelled and its message
      retried (None: never).
    * ``ack_batch_size`` (``32``) and ``ack_interval`` (``0.2``): acks are sent together
      (BATCH_ACK_MESSAGE) once this many wait, or this often.
    * ``route_interval`` (``20.0``): how often the topics' brokers are looked up.
    * ``max_body_size`` (4 MiB, a broker's default message limit): a compressed body that
      would inflate past it does not decode (a bomb), and goes as an undecodable message does.
    """

    orderly: bool = attrs.field(default=False, validator=_check_orderly)
    consume_from: ConsumeFrom = attrs.field(
        default=ConsumeFrom.LAST_OFFSET, validator=_check_consume_from
    )
    invisible_time: float = attrs.field(default=60.0, validator=_check_invisible_time)
    poll_time: float = attrs.field(default=15.0, validator=_check_poll_time)
    pop_batch_size: int = attrs.field(default=32, validator=count(maximum=MAX_POP_BATCH))
    concurrency: int = attrs.field(default=20, validator=count())
    consume_batch_size: int = attrs.field(default=1, validator=count())
    max_cached_messages: int = attrs.field(default=1000, validator=count())
    max_reconsume_times: int | None = attrs.field(default=None, validator=_check_max_reconsume)
    retry_delay: float | None = attrs.field(default=None, validator=maybe_seconds(allow_zero=True))
    suspend_delay: float = attrs.field(default=1.0, validator=seconds())
    consume_timeout: float | None = attrs.field(default=15 * 60.0, validator=maybe_seconds())
    ack_batch_size: int = attrs.field(default=32, validator=count())
    ack_interval: float = attrs.field(default=0.2, validator=seconds())
    route_interval: float = attrs.field(default=20.0, validator=seconds())
    max_body_size: int = attrs.field(default=MAX_MESSAGE_SIZE, validator=count())

    def __attrs_post_init__(self) -> None:
        if self.orderly and self.consume_batch_size > 1:
            raise ConfigError(
                "orderly=True consumes one message at a time: consume_batch_size must be 1"
            )

    def evolve(self, **changes: Any) -> PopOptions:
        """A copy with ``changes`` (checked as the constructor checks them)."""
        return attrs.evolve(self, **changes)


def check_pop_arguments(
    *,
    group: str,
    subscriptions: Mapping[str, str | MessageSelector],
    handler: object,
    batch_handler: object,
    sync_handler: bool,
    value_deserializer: object,
    options: PopOptions,
    client: ClientOptions,
) -> None:
    """Check what a POP consumer's constructor takes beside the option objects, and what
    depends on both (a batch size needs a batch handler, ...)."""
    validate_group(group)
    if not isinstance(subscriptions, Mapping) or not subscriptions:
        raise ConfigError("subscriptions must map at least one topic to an expression")
    for topic in subscriptions:
        validate_topic(topic, error=ConfigError)
        if topic.startswith(("%RETRY%", "%DLQ%")):
            raise ConfigError(f"subscriptions: {topic!r} is a retry or dead-letter topic")
    for name, value, kind in (("options", options, PopOptions), ("client", client, ClientOptions)):
        if not isinstance(value, kind):
            raise ConfigError(f"{name} must be a {kind.__name__}, not {type(value).__name__}")
    if handler is not None and batch_handler is not None:
        raise ConfigError("give handler or batch_handler, not both")
    if options.consume_batch_size > 1 and batch_handler is None:
        raise ConfigError("consume_batch_size > 1 needs a batch_handler")
    if options.orderly and batch_handler is not None:
        raise ConfigError("orderly=True consumes one message at a time: give a handler")
    if sync_handler and handler is None and batch_handler is None:
        raise ConfigError("sync_handler=True needs a handler or a batch_handler")
    check_deserializer(value_deserializer)
