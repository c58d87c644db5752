"""The rebalancer: the actor that decides which queues of its subscribed topics a member owns.

Shared by :class:`~.push.PushConsumer` and :class:`~.pull.PullConsumer`. Every ``interval``,
at once when asked (the broker's NOTIFY_CONSUMER_IDS_CHANGED, a new subscription, an orderly
queue whose release waited for its handler), and 0.5 s after an orderly lock was refused
(:meth:`Rebalancer.later`), it computes this member's share of every subscribed topic
(:func:`~.assignment.allocated`: the group's client ids and the Java client's strategies, or
every queue when broadcasting) and hands the wanted set to its owner's ``apply``, which
releases and starts queues. A topic whose share cannot be computed now (no route yet, no
broker answering) keeps the queues it has, and is looked at again after 1, 2, 4 ... s (up to
the interval) while it has no route.

An owner may give a ``refresh``, awaited before each round the actor makes (a pull
consumer's pattern subscription: the topics it matches now), and an ``allocate`` computing a
topic's share in place of the client-side one (a push consumer following the broker's mode:
:mod:`..push.poplane`).

``lock`` serializes rounds with whatever else moves queues (an offset reset, the orderly lock
keeper), so that a queue is never started and released at once.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Iterable

import anyio
from anyio.abc import TaskStatus

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.consumer.core.assignment import allocated
from rocketmq_actors.consumer.core.strategies import StrategyOption, as_allocator
from rocketmq_actors.errors import AllocationFailed, RocketMQError, TopicNotFound
from rocketmq_actors.logs import get_logger
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.runtime.backoff import Backoff
from rocketmq_actors.runtime.tree import Node

__all__ = ["Rebalancer"]

log = get_logger("rocketmq_actors.consumer")

Apply = Callable[[set[MessageQueue]], Awaitable[None]]


class Rebalancer:
    def __init__(
        self,
        instance: ClientInstance,
        group: str,
        *,
        strategy: StrategyOption,
        broadcasting: bool,
        interval: float,
        topics: Callable[[], Iterable[str]],
        owned: Callable[[], Iterable[MessageQueue]],
        apply: Apply,
        refresh: Callable[[], Awaitable[None]] | None = None,
        allocate: Callable[[str], Awaitable[list[MessageQueue]]] | None = None,
    ) -> None:
        self.instance = instance
        self.group = group
        self.strategy = as_allocator(strategy)
        self.broadcasting = broadcasting
        self.interval = interval
        self._topics = topics
        self._owned = owned
        self._apply = apply
        self._refresh = refresh
        self._allocate = allocate
        self.lock = anyio.Lock()
        self.rounds = 0
        self.missing: set[str] = set()  # subscribed topics with no route yet
        self._now = anyio.Event()
        self._stopped = False
        self._later = math.inf  # a round asked for at this time (anyio clock)
        self._waiting: anyio.CancelScope | None = None  # the actor's wait for the next round

    def trigger(self) -> None:
        """Rebalance now (the broker said the group changed, or a subscription did)."""
        self._now.set()

    def later(self, delay: float) -> None:
        """Another round ``delay`` seconds from now, unless one comes sooner (an orderly lock
        the broker refused: Java's ``rebalanceLater(500)``)."""
        self._later = min(self._later, anyio.current_time() + delay)
        if self._waiting is not None:
            self._waiting.deadline = min(self._waiting.deadline, self._later)

    def stop(self) -> None:
        """No more rounds (the owner is stopping)."""
        self._stopped = True
        self._now.set()

    async def rebalance(self) -> None:
        """One round, under :attr:`lock`."""
        async with self.lock:
            topics = list(self._topics())
            if self._stopped or not topics:  # (a pull consumer with queues assigned by hand)
                return
            wanted: set[MessageQueue] = set()
            for topic in topics:
                if topic not in self._topics():  # (unsubscribed while the round went on)
                    continue
                try:
                    if self._allocate is not None:
                        mine = await self._allocate(topic)
                    else:
                        mine = await allocated(self.instance, self.group, topic, self.strategy,
                                               broadcasting=self.broadcasting)  # fmt: skip
                except RocketMQError as exc:  # keep what we have, try again later
                    if isinstance(exc, TopicNotFound):
                        self.missing.add(topic)
                    if isinstance(exc, AllocationFailed):  # the application's strategy
                        log.warning("consumer.allocation_failed", group=self.group, topic=topic,
                                    error=str(exc))  # fmt: skip
                    else:
                        log.info("consumer.rebalance_skipped", topic=topic, error=str(exc))
                    wanted |= {q for q in self._owned() if q.topic == topic}
                    continue
                self.missing.discard(topic)
                wanted |= set(mine)
            self.rounds += 1
            await self._apply(wanted)

    async def run(self, *, task_status: TaskStatus[Rebalancer] = anyio.TASK_STATUS_IGNORED) -> None:
        """The actor: a round every ``interval`` or when triggered; topics without a route are
        looked at again sooner, with a growing back-off."""
        missing = Backoff(min(1.0, self.interval), self.interval, jitter=False)
        task_status.started(self)
        while not self._stopped:
            wait = self.interval
            if self.missing:
                wait = min(wait, missing.next())
            else:
                missing.reset()
            deadline = min(anyio.current_time() + wait, self._later)
            with anyio.CancelScope(deadline=deadline) as self._waiting:
                await self._now.wait()
            self._waiting = None
            self._now = anyio.Event()
            self._later = math.inf
            if self._refresh is not None:
                await self._refresh()
            await self.rebalance()

    def describe(self) -> Node:
        info: dict[str, object] = {"rounds": self.rounds}
        if self.missing:
            info["missing"] = sorted(self.missing)
        return Node(name="rebalancer", kind="rebalancer", info=info)
