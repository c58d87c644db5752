"""The ``rocketmq_client_consumer_lag`` gauge: messages stored in a queue past the offset the
consumer has committed, per queue it owns.

A pull's answer carries the queue's max offset, so a pulling queue actor records its lag as it
goes; but an idle consumer's pull is held by the broker (long polling, up to ``pull_suspend``)
and one under flow control does not pull at all, so that figure alone goes stale: messages
stored while the handlers are busy do not show, and the lag of messages just consumed stays up
until the next pull returns. :class:`ConsumerLag` refreshes every owned queue's gauge from the
broker's max offsets on the offset persister's tick (``persist_interval``): one
GET_CONSUME_STATS per (broker, topic), as ``mqadmin consumerProgress`` reads it, so the cost
grows with the brokers and topics, not the queues (GET_MAX_OFFSET only for a queue that answer
leaves out, or when the broker refuses it). The gauge is then as fresh as the offsets the
broker holds for the group. Queues no longer owned lose their series, and a stopped consumer
all of its own (a one-off metric of a gone consumer would read as lag that never moves).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Awaitable, Callable, Mapping
from typing import Protocol

import anyio

from rocketmq_actors.consumer.core.offsets import OffsetStore
from rocketmq_actors.consumer.core.process_queue import ProcessQueue
from rocketmq_actors.errors import BrokerError, RocketMQError
from rocketmq_actors.logs import get_logger
from rocketmq_actors.metrics import METRICS
from rocketmq_actors.protocol.bodies import MessageQueue

__all__ = ["LAG", "ConsumerLag", "record_lag"]

log = get_logger("rocketmq_actors.consumer")

LAG = "rocketmq_client_consumer_lag"


def record_lag(group: str, offsets: OffsetStore, pq: ProcessQueue, max_offset: int) -> None:
    """The queue's lag: ``max_offset`` less the committed offset - before the first commit,
    the oldest message still in process (else where the next pull starts)."""
    queue = pq.queue
    committed = offsets.read(queue)
    if committed is None:
        lowest = pq.lowest
        committed = pq.next_offset if lowest is None else lowest
    METRICS.set(LAG, max(0, max_offset - committed), group=group, topic=queue.topic,
                broker=queue.broker_name, queue=queue.queue_id)  # fmt: skip


class LagOwner(Protocol):
    group: str
    offsets: OffsetStore

    def owned_queues(self) -> dict[MessageQueue, ProcessQueue]: ...


#: the max offsets of every queue a broker holds of a topic: (topic, broker name) -> offsets
MaxOffsets = Callable[[str, str], Awaitable[Mapping[MessageQueue, int]]]


class ConsumerLag:
    """The lag gauges of one consumer; :meth:`refresh` asks the brokers, ``max_offsets`` once
    per (broker, topic) and ``max_offset`` for a queue its answer leaves out (bounded by
    ``timeout``: a broker that does not answer leaves its queues' gauges as they were)."""

    def __init__(
        self,
        owner: LagOwner,
        max_offsets: MaxOffsets,
        max_offset: Callable[[MessageQueue], Awaitable[int]],
        *,
        timeout: float,
    ) -> None:
        self.owner = owner
        self._max_offsets = max_offsets
        self._max_offset = max_offset
        self.timeout = timeout
        self._reported: set[MessageQueue] = set()
        self._forgotten = False

    async def refresh(self) -> None:
        self._forgotten = False
        owned = self.owner.owned_queues()
        by_broker: defaultdict[tuple[str, str], list[ProcessQueue]] = defaultdict(list)
        for queue, pq in owned.items():
            by_broker[queue.topic, queue.broker_name].append(pq)
        with anyio.move_on_after(self.timeout):
            async with anyio.create_task_group() as tg:
                for (topic, broker_name), pqs in by_broker.items():
                    tg.start_soon(self._refresh_broker, topic, broker_name, pqs)
        self._drop_others(owned)

    async def _refresh_broker(self, topic: str, broker_name: str, pqs: list[ProcessQueue]) -> None:
        found: Mapping[MessageQueue, int]
        try:
            found = await self._max_offsets(topic, broker_name)
        except BrokerError as exc:  # refused (an ACL without the group's stats): queue by queue
            log.debug("consumer.lag_stats_refused", group=self.owner.group, topic=topic,
                      broker=broker_name, error=repr(exc))  # fmt: skip
            found = {}
        except RocketMQError as exc:  # the next tick asks again
            log.debug("consumer.lag_refresh_failed", group=self.owner.group, topic=topic,
                      broker=broker_name, error=repr(exc))  # fmt: skip
            return
        async with anyio.create_task_group() as tg:
            for pq in pqs:
                if pq.queue in found:
                    self._record(pq, found[pq.queue])
                else:
                    tg.start_soon(self._refresh_one, pq)

    async def _refresh_one(self, pq: ProcessQueue) -> None:
        try:
            max_offset = await self._max_offset(pq.queue)
        except RocketMQError as exc:  # the next tick asks again; pulls record it meanwhile
            log.debug("consumer.lag_refresh_failed", group=self.owner.group,
                      queue=str(pq.queue), error=repr(exc))  # fmt: skip
            return
        self._record(pq, max_offset)

    def _record(self, pq: ProcessQueue, max_offset: int) -> None:
        if not pq.dropped and not self._forgotten:
            record_lag(self.owner.group, self.owner.offsets, pq, max_offset)

    def _drop_others(self, owned: Mapping[MessageQueue, ProcessQueue]) -> None:
        gone, self._reported = self._reported - owned.keys(), set(owned)
        self._remove(gone)

    def forget(self) -> None:
        """Remove the lag series of this consumer's queues (it is stopping; called again once
        its queue actors are gone, for a pull that ended in between)."""
        self._forgotten = True
        self._reported |= set(self.owner.owned_queues())
        self._remove(self._reported)

    def _remove(self, queues: set[MessageQueue]) -> None:
        # only this consumer's queues: two members of a group in one process share the labels
        if not queues:
            return
        keys = {(q.topic, q.broker_name, str(q.queue_id)) for q in queues}
        METRICS.remove_gauges(
            LAG, lambda labels: (labels["topic"], labels["broker"], labels["queue"]) not in keys,
            group=self.owner.group,
        )  # fmt: skip
