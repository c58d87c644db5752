"""What a pull consumer consumes, as aiokafka's ``SubscriptionState`` keeps it: topics (each with
its expression), a pattern over topic names, or queues assigned by hand - one of the three at a
time (:meth:`SubscriptionState.require`), until ``unsubscribe()``.

Beside what the user asked for, the state holds what goes on the wire: ``table``, every topic's
:class:`~rocketmq_actors.consumer.core.subscriptions.Subscription` the heartbeats carry (the
subscribed topics', and those of queues assigned or pulled by hand), its version, and
``rebalanced``, the topics whose queues the group shares.
"""

from __future__ import annotations

import enum
import re
import time
from collections.abc import Iterable, Mapping
from typing import Protocol

from rocketmq_actors.consumer.core.subscriptions import MessageSelector, Subscription
from rocketmq_actors.errors import ClientStateError, ConfigError
from rocketmq_actors.names import unwrap, validate_topic, wrap
from rocketmq_actors.protocol.bodies import MessageQueue

__all__ = [
    "Mode", "RebalanceListener", "SubscriptionState", "Topics", "compile_pattern", "parse_topics",
]  # fmt: skip

#: what ``topics`` takes: topic names (every tag), or topic -> tag expression or selector
Topics = Iterable[str] | Mapping[str, str | MessageSelector]


class RebalanceListener(Protocol):
    """Told when the group moves a subscribed topic's queues (aiokafka's
    ``ConsumerRebalanceListener``): revoked queues after their positions were committed (with
    auto-commit), assigned queues once their starting positions are known."""

    async def on_queues_revoked(self, revoked: set[MessageQueue]) -> None:
        """The queues taken from this member (their positions committed first with
        auto-commit)."""

    async def on_queues_assigned(self, assigned: set[MessageQueue]) -> None:
        """The queues given to this member, once their starting positions are known."""


class Mode(enum.Enum):
    NONE = "nothing"
    TOPICS = "topics"
    PATTERN = "a pattern"
    ASSIGNED = "queues assigned by hand"


def parse_topics(topics: Topics, namespace: str | None) -> dict[str, Subscription]:
    """``topics`` by the topic's wire name (a ConfigError for a name or expression that cannot
    be, and for a plain string, which would be taken letter by letter)."""
    if isinstance(topics, str | bytes):
        raise ConfigError(
            f"topics must be a list of topic names or a mapping topic -> expression, not a "
            f"string ({topics!r}): give [{topics!r}]"
        )
    selectors: Mapping[str, str | MessageSelector] = (
        topics if isinstance(topics, Mapping) else dict.fromkeys(topics, "*")
    )
    table: dict[str, Subscription] = {}
    for topic, selector in selectors.items():
        validate_topic(topic, error=ConfigError)
        wire = wrap(namespace, topic)
        table[wire] = Subscription.of(wire, selector)
    return table


def compile_pattern(pattern: str | re.Pattern[str]) -> re.Pattern[str]:
    if isinstance(pattern, re.Pattern):
        return pattern
    if not isinstance(pattern, str):
        raise ConfigError(f"pattern must be a regular expression, not {type(pattern).__name__}")
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ConfigError(f"pattern {pattern!r} is not a regular expression: {exc}") from None


class SubscriptionState:
    def __init__(self, namespace: str | None) -> None:
        self.namespace = namespace
        self.mode = Mode.NONE
        self.topics: dict[str, Subscription] = {}  # Mode.TOPICS: as the user gave them
        self.pattern: re.Pattern[str] | None = None  # Mode.PATTERN
        self.assigned: set[MessageQueue] = set()  # Mode.ASSIGNED: the queues (wire names)
        self.listener: RebalanceListener | None = None
        self.table: dict[str, Subscription] = {}  # by wire topic: what the heartbeats carry
        self.rebalanced: set[str] = set()  # the topics whose queues the group shares
        self.version = time.time_ns() // 1_000_000

    def require(self, mode: Mode) -> None:
        """Topics, a pattern and queues assigned by hand exclude each other (aiokafka's rule):
        :class:`ClientStateError` for another than the current one, until ``unsubscribe()``."""
        if self.mode not in (Mode.NONE, mode):
            raise ClientStateError(
                f"this consumer consumes {self.mode.value}: unsubscribe() before it can consume "
                f"{mode.value} (subscribe or assign)"
            )

    def take(
        self, topics: dict[str, Subscription], pattern: re.Pattern[str] | None,
        listener: RebalanceListener | None,
    ) -> None:  # fmt: skip
        """What ``subscribe`` asked for (checked by :meth:`require`)."""
        self.mode = Mode.TOPICS if pattern is None else Mode.PATTERN
        self.topics, self.pattern, self.listener = topics, pattern, listener

    def clear(self) -> None:
        """Back to no subscription (``unsubscribe()``)."""
        self.mode, self.pattern, self.listener = Mode.NONE, None, None
        self.topics, self.assigned, self.rebalanced = {}, set(), set()

    def changed(self) -> None:
        """The table changed: a new version for the heartbeats and pulls."""
        self.version = max(self.version + 1, time.time_ns() // 1_000_000)

    def subscription(self, topic: str) -> Subscription:
        """What a queue of ``topic`` is pulled with (every tag, for a topic that just left
        the table and whose queues are about to be revoked)."""
        found = self.table.get(topic)
        return found if found is not None else Subscription(topic)

    def names(self) -> frozenset[str]:
        """The topics consumed, as the application names them (aiokafka's
        ``subscription()``): those given, those the pattern matches, or those of the queues
        assigned."""
        if self.mode is Mode.TOPICS:
            wire: Iterable[str] = self.topics
        elif self.mode is Mode.PATTERN:
            wire = self.rebalanced
        else:
            wire = {q.topic for q in self.assigned}
        return frozenset(unwrap(self.namespace, t) for t in wire)
