"""The orderly consume service: each queue in offset order, under the broker's lock.

In clustering mode a queue is started only once this member holds the broker-side lock on it
(LOCK_BATCH_MQ, see :mod:`.locks`); the lock keeper renews every lock every
``lock_interval``, and a queue whose lock lapsed waits. Each queue actor runs
:meth:`OrderlyConsumeService.consume`: take the next batch in offset order, run the handler
under the queue's consume lock (a release waits for it, so the next owner comes after), then
commit it - or, on failure, commit its head up to the first failed message, suspend the queue
for ``suspend_delay`` (or the nack's delay) and consume the rest of the batch again first.
Past ``max_reconsume_times`` (unbounded by default, as in Java) failed messages go to the DLQ;
a message that cannot be decoded goes there at once, alone (it would block the queue for
ever).
At most ``concurrency`` handlers run at once over all queues.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Protocol

import anyio
from anyio.abc import TaskStatus

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.consumer.core.dispatch import Dispatcher, settled
from rocketmq_actors.consumer.core.message import ReceivedMessage
from rocketmq_actors.consumer.core.offsets import OffsetStore
from rocketmq_actors.consumer.core.process_queue import ProcessQueue
from rocketmq_actors.consumer.core.sendback import DLQ_NOW
from rocketmq_actors.consumer.core.settlement import Outcome
from rocketmq_actors.consumer.push.locks import LOCK_MAX_LIVE, lock_queues
from rocketmq_actors.logs import get_logger
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.records import MessageExt
from rocketmq_actors.runtime.backoff import Backoff
from rocketmq_actors.runtime.tree import Node

__all__ = ["OrderlyConsumeService"]

log = get_logger("rocketmq_actors.consumer")


class OrderlyOwner(Protocol):
    group: str
    offsets: OffsetStore

    @property
    def instance(self) -> ClientInstance: ...
    @property
    def clustering(self) -> bool: ...
    @property
    def locking(self) -> bool: ...
    @property
    def stopping(self) -> bool: ...
    async def send_back(self, message: MessageExt, delay_level: int) -> bool: ...
    def flow_changed(self) -> None: ...
    def owned_queues(self) -> dict[MessageQueue, ProcessQueue]: ...
    def rebalance_now(self) -> None: ...


class OrderlyConsumeService:
    def __init__(
        self,
        owner: OrderlyOwner,
        dispatcher: Dispatcher,
        *,
        concurrency: int,
        consume_batch_size: int,
        suspend_delay: float,
        max_reconsume_times: int,
        lock_interval: float,
        rebalance_lock: anyio.Lock,
    ) -> None:
        self.owner = owner
        self.dispatcher = dispatcher
        self.consume_batch_size = consume_batch_size
        self.max_reconsume_times = max_reconsume_times
        self.lock_interval = lock_interval
        self._suspend = Backoff.constant(suspend_delay)
        self._slots = anyio.Semaphore(concurrency)  # handlers running at once
        self._rebalance_lock = rebalance_lock
        self.renewals = 0
        self.suspended = 0
        self.lock_keeper = LockKeeper(self)

    async def consume(self, pq: ProcessQueue) -> None:
        """One queue, in offset order (run by the queue's actor)."""
        owner = self.owner
        while not pq.dropped and not owner.stopping:
            if owner.locking and (not pq.locked or time.monotonic() - pq.lock_time > LOCK_MAX_LIVE):
                with anyio.move_on_after(self._suspend.next()):
                    await pq.wait_arrival()  # woken by a renewal, a new message or a stop
                continue
            async with self._slots, pq.consume_lock:
                if pq.dropped or owner.stopping:
                    break
                batch = self._take(pq)
                if not batch:
                    pq.rollback_taken()
                else:
                    try:
                        ok = await self.dispatcher.invoke(batch)
                        if ok is False:
                            done = await self._give_up_on(batch)
                        else:  # None: the consumer stops; the acked head is committed
                            done = len(batch) if ok else _acked_head(batch)
                    except BaseException:  # cancelled (a stop, a restart): consumed again later
                        pq.rollback_taken()
                        raise
                    if done:
                        owner.offsets.update(pq.queue, pq.commit_taken(done))
                        pq.last_consume = time.monotonic()
                        owner.flow_changed()
                    else:
                        pq.rollback_taken()
                    if done == len(batch):
                        continue
                    batch = batch[done:]  # consumed again first, after the suspension
                    if ok is False:
                        self.suspended += 1
            wait = self._suspend_for(batch) if batch else None
            with anyio.move_on_after(wait):
                await pq.wait_arrival()
        if pq.release_deferred and not owner.stopping:
            owner.rebalance_now()  # the handler the release waited for has ended:
            await anyio.sleep_forever()  # the queue stays, locked, until that round frees it

    def _take(self, pq: ProcessQueue) -> list[MessageExt]:
        """The next batch; a message that cannot be decoded goes alone (as in concurrent mode):
        in a batch the handler would never see the messages with it, and the queue would stop
        there for ever."""
        batch = pq.take(self.consume_batch_size)
        poison = next((i for i, m in enumerate(batch) if m.decode_error is not None), None)
        if poison is None or len(batch) == 1:
            return batch
        pq.rollback_taken()
        return pq.take(max(poison, 1))

    def _suspend_for(self, batch: list[MessageExt]) -> float:
        """How long the queue waits before ``batch`` (the messages consumed again): the longest
        nack delay among them (Java's ConsumeOrderlyContext.setSuspendCurrentQueueTimeMillis),
        else ``suspend_delay``."""
        default = self._suspend.next()
        waits = [
            m.settlement.suspend(default)
            for m in batch
            if isinstance(m, ReceivedMessage) and m.settlement is not None
            and m.settlement.outcome is Outcome.NACK
        ]  # fmt: skip
        return max(waits, default=default)

    async def _give_up_on(self, batch: list[MessageExt]) -> int:
        """After a failure: how many messages at the head of the batch may be committed - the
        acked ones, and the failed ones that go to the DLQ (past ``max_reconsume_times``,
        undecodable, or nacked with ``requeue=False``; Java's checkReconsumeTimes) - up to the
        first one to consume again. That one and all after it are rolled back and delivered
        again after the suspension, whatever their settlement: a later message cannot be
        committed before it, and one nacked with ``requeue=False`` is dead-lettered only when
        it reaches the head (never twice)."""
        owner = self.owner
        for done, message in enumerate(batch):
            outcome = settled(message)
            if outcome is Outcome.ACK:
                continue
            hopeless = message.decode_error is not None or outcome is Outcome.DEAD
            if (hopeless or message.reconsume_times >= self.max_reconsume_times) and (
                not owner.clustering or await owner.send_back(message, DLQ_NOW)
            ):
                continue
            for again in batch[done:]:  # redelivered: as Java counts a suspended batch
                again.reconsume_times += 1
            return done
        return len(batch)

    async def renew(self) -> None:
        owner = self.owner
        async with self._rebalance_lock:  # never renews a lock a release is giving back
            owned = owner.owned_queues()
            if not owned or owner.stopping:
                return
            granted = await lock_queues(owner.instance, owner.group, owned)
        self.renewals += 1
        self.apply_locks(owned.items(), granted)

    @staticmethod
    def apply_locks(
        owned: Iterable[tuple[MessageQueue, ProcessQueue]], granted: set[MessageQueue]
    ) -> None:
        now = time.monotonic()
        for queue, pq in owned:
            if queue in granted:
                pq.locked, pq.lock_time = True, now
                pq.wake()
            elif pq.locked:
                pq.locked = False
                log.warning("consumer.lock_lost", queue=str(queue))

    def describe(self) -> Node:
        return Node(
            name="consume", kind="consume-service",
            info={"mode": "orderly", "consumed": self.dispatcher.consumed,
                  "failed": self.dispatcher.failed, "suspended": self.suspended},
        )  # fmt: skip


def _acked_head(batch: list[MessageExt]) -> int:
    return next((i for i, m in enumerate(batch) if settled(m) is not Outcome.ACK), len(batch))


class LockKeeper:
    """The lock keeper actor: renews the locks of the queues consumed in order."""

    def __init__(self, service: OrderlyConsumeService) -> None:
        self.service = service

    async def run(self, *, task_status: TaskStatus[LockKeeper] = anyio.TASK_STATUS_IGNORED) -> None:
        task_status.started(self)
        while True:
            await anyio.sleep(self.service.lock_interval)
            await self.service.renew()

    def describe(self) -> Node:
        return Node(name="locks", kind="lock-keeper", info={"renewals": self.service.renewals})
