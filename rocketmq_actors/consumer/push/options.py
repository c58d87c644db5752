"""A push consumer's own options: :class:`PushOptions`, a frozen value checked when it is built.

    options = PushOptions(orderly=True, concurrency=8, consume_from=ConsumeFrom.FIRST_OFFSET)
    async with PushConsumer(group="billing", subscriptions={"orders": "*"}, handler=handle,
                            namesrv="127.0.0.1:9876", options=options): ...

A wrong value is a :class:`~rocketmq_actors.errors.ConfigError` naming the option, raised by
``PushOptions(...)`` itself, before any consumer exists. What every client shares (namespace,
TLS, credentials, ``request_timeout``, ``shutdown_timeout``, tracing, ``on_error``) is in
:class:`~rocketmq_actors.cluster.options.ClientOptions`; what nearly every consumer sets (group,
subscriptions, handler, deserializer) is given to the constructor, and checked there by
:func:`check_arguments`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs

from rocketmq_actors.cluster.options import ClientOptions, count, maybe_seconds, seconds
from rocketmq_actors.consumer.core.options import (
    ConsumeFrom,
    MessageModel,
    check_deserializer,
    check_dir,
    check_strategy,
    member_of,
)
from rocketmq_actors.consumer.core.rebalance import Strategy
from rocketmq_actors.consumer.core.strategies import StrategyOption
from rocketmq_actors.errors import ConfigError
from rocketmq_actors.names import validate_group, validate_topic
from rocketmq_actors.protocol.messages import MAX_MESSAGE_SIZE

__all__ = ["PushOptions", "check_arguments"]


def _maybe_count(*, minimum: int = 1) -> Callable[[Any, attrs.Attribute[Any], Any], None]:
    inner = count(minimum=minimum)

    def check(options: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if value is not None:
            inner(options, attribute, value)

    return check


def _check_flag(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, bool):
        raise ConfigError(f"{attribute.name} must be a bool, not {value!r}")


@attrs.frozen(kw_only=True)
class PushOptions:
    """How a :class:`~rocketmq_actors.consumer.push.PushConsumer` consumes (times in seconds,
    sizes in bytes; docs/operations.md has the same table).

    * ``model`` (``MessageModel.CLUSTERING``): or ``BROADCASTING``, every member gets every
      message (offsets kept in local files, under ``offset_dir``).
    * ``orderly`` (False): each queue in offset order, under the broker's lock.
    * ``consume_from`` (``ConsumeFrom.LAST_OFFSET``): where a group without a committed offset
      starts; ``consume_timestamp_ms`` (None: 30 minutes before the consumer is built) with
      ``ConsumeFrom.TIMESTAMP``.
    * ``strategy`` (``Strategy.AVG``): queue allocation, a ``Strategy`` or a callable
      ``(group, client_id, queues, client_ids) -> queues`` (:mod:`..core.strategies`).
    * ``concurrency`` (20): handlers running at once; ``consume_batch_size`` (1): messages per
      ``batch_handler`` call; ``pull_batch_size`` (32): messages per pull request.
    * Flow control, per queue: ``max_cached_messages`` (1000), ``max_cached_bytes`` (100 MiB);
      per topic, over its queues: ``max_cached_messages_per_topic``,
      ``max_cached_bytes_per_topic`` (None); concurrently, ``max_span`` (2000) offsets between
      the oldest and newest cached message.
    * ``max_reconsume_times`` (None: 16, unbounded when orderly): deliveries before the DLQ;
      ``retry_delay_level`` (0: the broker's schedule, -1: the DLQ at once) of a message sent
      back; ``local_retry_delay`` (5.0): a message that could not be sent back is consumed
      again here after this; ``suspend_delay`` (1.0): orderly, a queue's pause after a failure.
    * ``consume_timeout`` (900.0; None: never): a handler running longer is cancelled and its
      message retried.
    * ``rebalance_interval`` (20.0), ``lock_interval`` (20.0, orderly lock renewal),
      ``persist_interval`` (5.0, offset commits), ``pull_suspend`` (15.0, the broker's long
      poll on an empty queue).
    * ``offset_dir`` (None: ``~/.rocketmq_actors/offsets``): broadcasting, the local offset
      files.
    * ``max_body_size`` (4 MiB, a broker's default message limit): a compressed body that
      would inflate past it does not decode (a bomb), and goes as an undecodable message does.
      What a pull's bodies inflate to counts against ``max_cached_bytes`` before it is
      allocated: the records past the room left are read again by a later pull.
    * ``client_rebalance`` (True): False follows the broker's request mode (Java's
      ``setClientRebalance(false)``, 5.x brokers): each rebalance asks a broker which queues
      this member has and whether to pull or pop them, as an operator set it for the group
      (``admin.set_message_request_mode``; :mod:`.poplane`). ``strategy`` must then be one the
      broker runs, ``Strategy.AVG`` or ``Strategy.AVG_BY_CIRCLE``. Orderly and broadcasting
      consumers allocate on the client, as Java's do. A queue in POP mode is popped
      ``pop_batch_size`` (32) messages at a time, each invisible to the group for
      ``pop_invisible_time`` (60.0) until its handler settles it.
    """

    model: MessageModel = attrs.field(default=MessageModel.CLUSTERING,
                                      validator=member_of(MessageModel))  # fmt: skip
    orderly: bool = attrs.field(default=False, validator=_check_flag)
    consume_from: ConsumeFrom = attrs.field(default=ConsumeFrom.LAST_OFFSET,
                                            validator=member_of(ConsumeFrom))  # fmt: skip
    consume_timestamp_ms: int | None = attrs.field(default=None,
                                                   validator=_maybe_count(minimum=0))  # fmt: skip
    strategy: StrategyOption = attrs.field(default=Strategy.AVG, validator=check_strategy)
    concurrency: int = attrs.field(default=20, validator=count())
    consume_batch_size: int = attrs.field(default=1, validator=count())
    pull_batch_size: int = attrs.field(default=32, validator=count())
    max_cached_messages: int = attrs.field(default=1000, validator=count())
    max_cached_bytes: int = attrs.field(default=100 * 1024 * 1024, validator=count())
    max_cached_messages_per_topic: int | None = attrs.field(default=None,
                                                            validator=_maybe_count())  # fmt: skip
    max_cached_bytes_per_topic: int | None = attrs.field(default=None, validator=_maybe_count())
    max_span: int = attrs.field(default=2000, validator=count())
    max_reconsume_times: int | None = attrs.field(default=None, validator=_maybe_count(minimum=0))
    retry_delay_level: int = attrs.field(default=0, validator=count(minimum=-1, maximum=18))
    local_retry_delay: float = attrs.field(default=5.0, validator=seconds())
    suspend_delay: float = attrs.field(default=1.0, validator=seconds())
    consume_timeout: float | None = attrs.field(default=15 * 60.0, validator=maybe_seconds())
    rebalance_interval: float = attrs.field(default=20.0, validator=seconds())
    lock_interval: float = attrs.field(default=20.0, validator=seconds())
    persist_interval: float = attrs.field(default=5.0, validator=seconds())
    pull_suspend: float = attrs.field(default=15.0, validator=seconds())
    offset_dir: Path | str | None = attrs.field(default=None, validator=check_dir)
    max_body_size: int = attrs.field(default=MAX_MESSAGE_SIZE, validator=count())
    client_rebalance: bool = attrs.field(default=True, validator=_check_flag)
    pop_batch_size: int = attrs.field(default=32, validator=count(maximum=32))
    pop_invisible_time: float = attrs.field(default=60.0, validator=seconds())

    def __attrs_post_init__(self) -> None:
        if self.broker_mode and self.strategy not in (Strategy.AVG, Strategy.AVG_BY_CIRCLE):
            raise ConfigError(
                "client_rebalance=False: the broker allocates, with Strategy.AVG or "
                f"Strategy.AVG_BY_CIRCLE only, not {self.strategy!r}"
            )

    @property
    def broker_mode(self) -> bool:
        """Whether the broker decides the queues and their mode (``client_rebalance=False``,
        concurrent clustering: Java's ``RebalancePushImpl.clientRebalance``)."""
        return not (self.client_rebalance or self.orderly
                    or self.model is MessageModel.BROADCASTING)  # fmt: skip

    def evolve(self, **changes: Any) -> PushOptions:
        """A copy with ``changes`` (checked as the constructor checks them)."""
        return attrs.evolve(self, **changes)


def check_arguments(
    *,
    group: object,
    subscriptions: object,
    handler: object,
    batch_handler: object,
    sync_handler: object,
    value_deserializer: object,
    on_rebalance: object,
    options: object,
    client: object,
) -> None:
    """Check what a push consumer's constructor was given beside its options (built checked),
    and the handlers against the options."""
    validate_group(group)  # type: ignore[arg-type]  # (a wrong type is a ConfigError)
    if not isinstance(subscriptions, Mapping) or not subscriptions:
        raise ConfigError("subscriptions must map at least one topic to an expression")
    for topic in subscriptions:
        validate_topic(topic, error=ConfigError)
    if not isinstance(options, PushOptions):
        raise ConfigError(f"options must be a PushOptions, not {type(options).__name__}")
    if not isinstance(client, ClientOptions):
        raise ConfigError(f"client must be a ClientOptions, not {type(client).__name__}")
    if handler is not None and batch_handler is not None:
        raise ConfigError("give handler or batch_handler, not both")
    if options.consume_batch_size > 1 and batch_handler is None:
        raise ConfigError("consume_batch_size > 1 needs a batch_handler")
    if sync_handler and handler is None and batch_handler is None:
        raise ConfigError("sync_handler=True needs a handler or a batch_handler")
    check_deserializer(value_deserializer)
    if on_rebalance is not None and not callable(on_rebalance):
        raise ConfigError(f"on_rebalance must be callable, not {type(on_rebalance).__name__}")
