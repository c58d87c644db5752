"""A pull consumer's options: :class:`PullOptions`, a frozen value checked when it is built
(every wrong value a :class:`~rocketmq_actors.errors.ConfigError` naming the option)."""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Any

import attrs

from rocketmq_actors.cluster.options import count, instance_of, seconds
from rocketmq_actors.consumer.core.options import MessageModel, check_dir, check_strategy, member_of
from rocketmq_actors.consumer.core.rebalance import Strategy
from rocketmq_actors.consumer.core.strategies import StrategyOption
from rocketmq_actors.errors import ConfigError
from rocketmq_actors.protocol.messages import MAX_MESSAGE_SIZE

__all__ = ["OffsetReset", "PullOptions"]


class OffsetReset(enum.Enum):
    """Where a queue with no committed offset starts."""

    EARLIEST = "earliest"
    LATEST = "latest"


def _offset_reset(value: OffsetReset | str) -> OffsetReset:
    try:
        return OffsetReset(value)
    except ValueError:
        raise ConfigError(
            f"auto_offset_reset must be 'earliest' or 'latest', not {value!r}"
        ) from None


@attrs.frozen(kw_only=True)
class PullOptions:
    """What a :class:`~rocketmq_actors.consumer.pull.PullConsumer` does beyond its group and
    topics (what it shares with every client is in
    :class:`~rocketmq_actors.cluster.options.ClientOptions`).

    * ``auto_commit`` (True): commit every queue's position every ``auto_commit_interval``,
      before its queues are revoked, and on close; without it only ``commit()`` commits.
    * ``auto_commit_interval`` (5.0): seconds between automatic commits.
    * ``auto_offset_reset`` (``OffsetReset.LATEST``): where a queue the group never committed
      starts, ``"earliest"`` or ``"latest"`` (the string is taken too).
    * ``strategy`` (``Strategy.AVG``): how the group shares a subscribed topic's queues: a
      ``Strategy`` or a callable ``(group, client_id, queues, client_ids) -> queues``.
    * ``pull_batch_size`` (32): messages per pull request.
    * ``max_buffered`` (1000): messages fetched ahead per queue.
    * ``pull_suspend`` (5.0): seconds the broker holds a pull of an empty queue (long polling).
    * ``rebalance_interval`` (20.0): seconds between rebalance rounds (the broker also triggers
      one when the group changes); a ``pattern`` subscription looks for new topics as often.
    * ``max_body_size`` (4 MiB, a broker's default message limit): a compressed body that
      would inflate past it does not decode (a bomb), and comes back as an undecodable record.
    * ``topic_metadata_check_interval`` (30.0, Java's ``topicMetadataCheckIntervalMillis``):
      seconds between looks at the queues of the topics ``watch_queues`` registered.
    * ``model`` (``MessageModel.CLUSTERING``): or ``BROADCASTING`` (Java's lite pull
      consumer's broadcasting): every member of the group gets every queue of its topics, and
      commits are kept in a local file under ``offset_dir``, not on the brokers.
    * ``offset_dir`` (None: ``~/.rocketmq_actors/offsets``): broadcasting, that local file's
      directory.
    """

    auto_commit: bool = attrs.field(default=True, validator=instance_of(bool))
    auto_commit_interval: float = attrs.field(default=5.0, validator=seconds())
    auto_offset_reset: OffsetReset = attrs.field(
        default=OffsetReset.LATEST, converter=_offset_reset
    )
    strategy: StrategyOption = attrs.field(default=Strategy.AVG, validator=check_strategy)
    pull_batch_size: int = attrs.field(default=32, validator=count())
    max_buffered: int = attrs.field(default=1000, validator=count())
    pull_suspend: float = attrs.field(default=5.0, validator=seconds())
    rebalance_interval: float = attrs.field(default=20.0, validator=seconds())
    max_body_size: int = attrs.field(default=MAX_MESSAGE_SIZE, validator=count())
    topic_metadata_check_interval: float = attrs.field(default=30.0, validator=seconds())
    model: MessageModel = attrs.field(default=MessageModel.CLUSTERING,
                                      validator=member_of(MessageModel))  # fmt: skip
    offset_dir: Path | str | None = attrs.field(default=None, validator=check_dir)

    def evolve(self, **changes: Any) -> PullOptions:
        """A copy with ``changes`` (checked as the constructor checks them)."""
        return attrs.evolve(self, **changes)
