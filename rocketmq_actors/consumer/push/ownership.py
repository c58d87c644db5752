"""The queues a push consumer owns: started when the rebalancer assigns them (an orderly queue
only once the broker granted its lock), released when it takes them away (the handler in
flight finished, the offset persisted and confirmed, the lock given back), moved when the
broker resets their offsets. The queue actors themselves are in :mod:`.queues`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import anyio

from rocketmq_actors.consumer.core.brokercalls import max_offset, offset_for_time
from rocketmq_actors.consumer.core.options import ConsumeFrom
from rocketmq_actors.consumer.core.process_queue import ProcessQueue
from rocketmq_actors.consumer.core.queues import QueueActor
from rocketmq_actors.consumer.push.locks import lock_queues, unlock_queues
from rocketmq_actors.consumer.push.ports import OwnershipPort
from rocketmq_actors.errors import RocketMQError
from rocketmq_actors.logs import get_logger
from rocketmq_actors.protocol.bodies import MessageQueue

__all__ = ["Ownership"]

log = get_logger("rocketmq_actors.consumer")

#: how long a release waits for an orderly queue's running handler before it defers
RELEASE_WAIT = 0.5
#: start-offset lookups in flight to one broker while a rebalance starts its new queues
LOOKUPS_PER_BROKER = 32
#: a new orderly queue whose lock the broker refused is tried again after this long
LOCK_RETRY_DELAY = 0.5


class Ownership:
    def __init__(self, consumer: OwnershipPort) -> None:
        self.consumer = consumer
        self.held: list[MessageQueue] = []  # orderly: the queues locked when the stop began

    async def apply(self, wanted: set[MessageQueue]) -> None:
        """The rebalancer's decision: release what is no longer ours, start what is new (an
        orderly queue only once the broker granted its lock)."""
        c = self.consumer
        if c.stopping:
            return
        for queue in [q for q in c.queues if q not in wanted]:
            await self.release(queue)
        new = sorted(wanted - set(c.queues))
        if new and c.locking:
            locked = await lock_queues(c.instance, c.group, new)
            for queue in new:
                if queue not in locked:
                    log.info("consumer.lock_not_granted", queue=str(queue))
            if len(locked) < len(new):  # held by the member that is giving them up: soon
                c.rebalance_later(LOCK_RETRY_DELAY)
            new = [q for q in new if q in locked]
        starts = await self.start_offsets(new)
        for queue in new:
            if queue in starts:
                await self.start(queue, starts[queue], locked=c.locking)
        refused = [queue for queue in new if queue not in starts]
        if refused and c.locking:
            await unlock_queues(c.instance, c.group, refused)
        if new:
            log.info("consumer.rebalanced", group=c.group, queues=len(c.queues))

    async def start_offsets(self, queues: Sequence[MessageQueue]) -> dict[MessageQueue, int]:
        """Where each new queue starts, looked up side by side (at most
        :data:`LOOKUPS_PER_BROKER` in flight to a broker) before any of them pulls: one after
        another, each lookup waited behind the pulls of the queues started before it, and a
        consumer of thousands of queues never finished its first rebalance. A queue whose
        lookup failed is left out (the next round tries it again)."""
        limits = {q.broker_name: anyio.CapacityLimiter(LOOKUPS_PER_BROKER) for q in queues}
        starts: dict[MessageQueue, int] = {}

        async def look_up(queue: MessageQueue) -> None:
            async with limits[queue.broker_name]:
                try:
                    starts[queue] = await self.start_offset(queue)
                except RocketMQError as exc:
                    log.info("consumer.start_offset_failed", queue=str(queue), error=str(exc))

        async with anyio.create_task_group() as tg:
            for queue in queues:
                tg.start_soon(look_up, queue)
        return starts

    async def start_offset(self, queue: MessageQueue) -> int:
        c = self.consumer
        committed = await c.offsets.fetch_start(queue)
        if committed is not None and committed >= 0:
            return committed
        retry = queue.topic.startswith("%RETRY%")
        consume_from = c.options.consume_from
        if consume_from is ConsumeFrom.FIRST_OFFSET or (
            retry and consume_from is ConsumeFrom.LAST_OFFSET
        ):
            return 0
        if consume_from is ConsumeFrom.TIMESTAMP and not retry:
            assert c.consume_timestamp_ms is not None
            return await offset_for_time(c.instance, queue, c.consume_timestamp_ms)
        return await max_offset(c.instance, queue)

    async def start(self, queue: MessageQueue, offset: int, *, locked: bool) -> QueueActor:
        c = self.consumer
        actor = QueueActor(c, queue, offset, locked=locked)
        await c.queues.start(actor)
        return actor

    async def stop(self, queue: MessageQueue) -> ProcessQueue:
        """Stop pulling and consuming ``queue``; once this returns, no handler runs on it."""
        c = self.consumer
        actor = c.queues.lookup(queue)
        assert actor is not None
        pq = actor.pq
        pq.dropped = True
        actor.stop_pulling()
        if c.orderly:  # wait for the handler in flight, so that the next owner comes after
            async with pq.consume_lock:
                pass
        await c.queues.stop(queue)
        return pq

    async def release(self, queue: MessageQueue) -> None:
        """Give ``queue`` up: its offset persisted, its orderly lock given back. An orderly
        queue whose handler is still running after :data:`RELEASE_WAIT` (Java's tryLock of the
        consume lock) is only dropped - no more pulls, no more handlers - and kept, locked,
        until that handler ends; then a round releases it. Meanwhile the rounds, and the lock
        renewal of the queues kept, go on."""
        c = self.consumer
        if c.orderly:
            actor = c.queues.lookup(queue)
            assert actor is not None
            if actor.pq.release_deferred and actor.pq.consume_lock.locked():
                return  # its handler still runs: its loop asks for a round when it ends
            actor.pq.dropped = True
            actor.stop_pulling()
            idle = False
            with anyio.move_on_after(RELEASE_WAIT):
                async with actor.pq.consume_lock:
                    idle = True
            if not idle:
                actor.pq.release_deferred = True  # its consume loop asks for a round at the end
                log.info("consumer.release_deferred", queue=str(queue))
                return
        await self.stop(queue)
        await c.offsets.persist([queue], confirmed=True)
        c.offsets.remove(queue)
        if c.locking:
            await unlock_queues(c.instance, c.group, [queue])
        log.info("consumer.queue_released", queue=str(queue))

    async def move(self, targets: Mapping[MessageQueue, int]) -> list[MessageQueue]:
        """Restart the owned queues among ``targets`` at the given offsets (fresh process queues,
        orderly locks kept) and commit those offsets (RESET_CONSUMER_CLIENT_OFFSET, or the broker
        answering a pull OFFSET_MOVED)."""
        c = self.consumer
        async with c.rebalance_lock:
            if c.stopping:
                return []
            moved = []
            for queue, offset in sorted(targets.items()):
                if queue not in c.queues:
                    continue
                old = await self.stop(queue)
                c.offsets.update(queue, offset, increase_only=False)
                actor = await self.start(queue, offset, locked=old.locked)
                actor.pq.lock_time = old.lock_time
                moved.append(queue)
            await c.offsets.persist(moved, confirmed=True)
            return moved

    async def unlock_held(self) -> None:
        """Orderly: give back the locks of what was owned when the stop began."""
        if self.held:
            await unlock_queues(self.consumer.instance, self.consumer.group, self.held)
