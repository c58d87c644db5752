"""A POP consumer's consume service: ``concurrency`` workers over the popped messages, and
what each outcome means for the broker (Java's ``ConsumeMessagePopConcurrentlyService`` and
``ConsumeMessagePopOrderlyService``).

Concurrent: a message acked (explicitly, or implicitly by a handler that returned) is acked
to the broker (batched, :mod:`.acks`); a failed one (nacked, or left unsettled by a
handler that raised or timed out, or one that could not be decoded) gets
CHANGE_MESSAGE_INVISIBLETIME: the broker delivers it again after the nack's delay, else after
Java's pop retry delay for its reconsume count (:data:`POP_RETRY_DELAYS`), through the pop
retry topic, to any member of the group. A failed message already consumed
``max_reconsume_times`` times, or nacked with ``requeue=False``, is sent to ``%DLQ%<group>``
(CONSUMER_SEND_MSG_BACK, delay level -1) and acked.

Orderly: the messages of one queue from one POP are consumed one after the other by one
worker; each consumed one is acked at once (the broker hands out the queue's next messages
only when these are acked or invisible again); on a failure the failed message and the rest of
the batch become visible again after the suspension (the nack's delay, else ``suspend_delay``,
kept within 10 ms and 30 s as the push consumer keeps it), and the broker delivers them again,
in order.

When the consumer stops, a message not yet settled is left alone: it becomes visible again
when its invisible time ends and is delivered to another member.
"""

from __future__ import annotations

import time
from typing import Protocol

import anyio
from anyio.abc import TaskStatus

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.consumer.core.dispatch import Dispatcher, settled
from rocketmq_actors.consumer.core.message import ReceivedMessage
from rocketmq_actors.consumer.core.sendback import DLQ_NOW
from rocketmq_actors.consumer.core.settlement import Outcome, delay_seconds
from rocketmq_actors.consumer.pop import calls as pop_calls
from rocketmq_actors.consumer.pop.acks import Acker
from rocketmq_actors.errors import RocketMQError
from rocketmq_actors.logs import get_logger
from rocketmq_actors.protocol.pop import ExtraInfo
from rocketmq_actors.protocol.records import MessageExt
from rocketmq_actors.runtime.tree import Node
from rocketmq_actors.runtime.workqueue import WorkQueue

__all__ = ["POP_RETRY_DELAYS", "PopConsumeService", "Popped"]

log = get_logger("rocketmq_actors.consumer")

#: seconds a failed message stays invisible, by its reconsume count: Java's
#: DefaultMQPushConsumerImpl.popDelayLevel (the last one for every count past it)
POP_RETRY_DELAYS = (10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600,
                    7200)  # fmt: skip

Popped = list[tuple[ReceivedMessage[bytes], ExtraInfo]]
Work = tuple[str, Popped]  # (the topic popped, its messages)


class PopOwner(Protocol):
    group: str
    max_reconsume_times: int
    retry_delay: float | None
    suspend_delay: float

    @property
    def instance(self) -> ClientInstance: ...
    @property
    def stopping(self) -> bool: ...
    async def send_back(self, message: MessageExt, delay_level: int) -> bool: ...
    def flow_changed(self) -> None: ...


class PopConsumeService:
    def __init__(
        self,
        owner: PopOwner,
        dispatcher: Dispatcher,
        acker: Acker,
        *,
        concurrency: int,
        consume_batch_size: int,
        orderly: bool,
    ) -> None:
        self.owner, self.dispatcher, self.acker = owner, dispatcher, acker
        self.concurrency, self.consume_batch_size = concurrency, consume_batch_size
        self.orderly = orderly
        self.work: WorkQueue[Work] = WorkQueue(concurrency * 2)
        self.cached = 0  # popped, not settled yet: the flow control's count
        self.retried = 0  # made visible again for a retry
        self.dead = 0  # sent to the DLQ
        self.expired = 0  # not consumed: their invisible time ran out while they waited
        self.busy = 0

    async def accept(self, topic: str, popped: Popped) -> None:
        """From a popper: queue the messages (waiting while the queue is full)."""
        self.cached += len(popped)
        if self.orderly:  # a queue's messages, in order, to one worker
            by_queue: dict[tuple[str, int], Popped] = {}
            for item in popped:
                by_queue.setdefault((item[1].retry, item[1].queue_id), []).append(item)
            batches = [sorted(b, key=lambda i: i[1].offset) for b in by_queue.values()]
        else:
            plain = [i for i in popped if i[0].decode_error is None]
            batches = [[i] for i in popped if i[0].decode_error is not None]  # poison alone
            size = self.consume_batch_size
            batches += [plain[i : i + size] for i in range(0, len(plain), size)]
        queued = 0
        try:
            for batch in batches:
                if not self.work.offer((topic, batch)):
                    await self.work.put((topic, batch))
                queued += len(batch)
        finally:  # cancelled or closed while waiting: what was not queued is not cached
            if queued < len(popped):
                self.cached -= len(popped) - queued
                self.owner.flow_changed()

    def close(self) -> None:
        self.work.close()

    async def run(self, *, task_status: TaskStatus[PopConsumeService]) -> None:
        async with anyio.create_task_group() as tg:
            for _ in range(self.concurrency):
                tg.start_soon(self._worker)
            task_status.started(self)

    async def _worker(self) -> None:
        while True:
            try:
                topic, batch = await self.work.get()
            except anyio.EndOfStream:
                return
            try:
                if not self.owner.stopping:
                    self.busy += 1
                    try:
                        if self.orderly:
                            await self._consume_orderly(topic, batch)
                        else:
                            await self._consume(topic, batch)
                    finally:
                        self.busy -= 1
            finally:  # (settled, or left to become visible again)
                self.cached -= len(batch)
                self.owner.flow_changed()

    def _expired(self, topic: str, handles: list[ExtraInfo]) -> bool:
        """Java's ``isPopTimeout``: the invisible time of a handle has run out, so the broker
        may have handed the message to another member already; it is not consumed here."""
        now = time.time_ns() // 1_000_000
        if any(h.pop_time > 0 and now - h.pop_time >= h.invisible_time for h in handles):
            self.expired += len(handles)
            log.info("consumer.pop.expired", group=self.owner.group, topic=topic,
                     messages=len(handles))  # fmt: skip
            return True
        return False

    async def _consume(self, topic: str, batch: Popped) -> None:
        if self._expired(topic, [h for _, h in batch]):
            return
        outcome = await self.dispatcher.invoke([m for m, _ in batch])
        for message, handle in batch:
            how = settled(message)
            if how is Outcome.ACK:
                self.acker.add(topic, handle)
            elif outcome is not None:  # (None: the consumer stops; left alone)
                await self._retry(topic, message, handle, later=self._delay(message))

    async def _consume_orderly(self, topic: str, batch: Popped) -> None:
        for i, (message, handle) in enumerate(batch):
            if self.owner.stopping or self._expired(topic, [handle]):
                return  # (the rest become visible again, in order)
            outcome = await self.dispatcher.invoke([message])
            how = settled(message)
            if how is Outcome.ACK:
                await self._ack_now(topic, handle)
                continue
            if outcome is None:
                return
            exhausted = message.reconsume_times >= self.owner.max_reconsume_times
            if (how is Outcome.DEAD or exhausted) and await self._dead_letter(
                topic, message, handle
            ):
                continue
            suspend = self._suspend(message)
            for _, rest in batch[i:]:  # the broker delivers them again, in order
                await self._change(topic, rest, suspend)
            return

    async def _retry(
        self, topic: str, message: ReceivedMessage[bytes], handle: ExtraInfo, *, later: float
    ) -> None:
        dead = settled(message) is Outcome.DEAD
        if (dead or message.reconsume_times >= self.owner.max_reconsume_times) and (
            await self._dead_letter(topic, message, handle)
        ):
            return
        await self._change(topic, handle, later)

    async def _dead_letter(
        self, topic: str, message: ReceivedMessage[bytes], handle: ExtraInfo
    ) -> bool:
        """To %DLQ%<group>, then acked; False when the send-back failed."""
        if not await self.owner.send_back(message, DLQ_NOW):
            return False
        self.dead += 1
        log.info("consumer.pop.dead_lettered", group=self.owner.group, msg_id=message.msg_id,
                 reconsume_times=message.reconsume_times)  # fmt: skip
        await self._ack_now(topic, handle)
        return True

    async def _ack_now(self, topic: str, handle: ExtraInfo) -> None:
        try:
            ok = await pop_calls.ack(self.owner.instance, self.owner.group, topic, handle)
        except RocketMQError as exc:
            log.info("consumer.pop.ack_failed", group=self.owner.group, error=str(exc),
                     broker=handle.broker_name, count=1, retry=0)  # fmt: skip
            return
        self.acker.count_acks(1, ok)

    async def _change(self, topic: str, handle: ExtraInfo, seconds: float) -> None:
        try:
            changed = await pop_calls.change_invisible_time(
                self.owner.instance, self.owner.group, topic, handle, seconds
            )
        except RocketMQError as exc:  # it becomes visible when its invisible time ends
            log.info("consumer.pop.change_invisible_failed", group=self.owner.group,
                     broker=handle.broker_name, error=str(exc))  # fmt: skip
            return
        if changed is not None:
            self.retried += 1

    def _delay(self, message: ReceivedMessage[bytes]) -> float:
        """How long a failed message stays invisible (concurrent mode)."""
        settlement = message.settlement
        if settlement is not None and settlement.delay is not None:
            return delay_seconds(settlement.delay)
        if self.owner.retry_delay is not None:
            return self.owner.retry_delay
        return float(POP_RETRY_DELAYS[min(message.reconsume_times, len(POP_RETRY_DELAYS) - 1)])

    def _suspend(self, message: ReceivedMessage[bytes]) -> float:
        settlement = message.settlement
        if settlement is None:
            return self.owner.suspend_delay
        return settlement.suspend(self.owner.suspend_delay)

    def describe(self) -> Node:
        return Node(
            name="consume", kind="consume-service", mailbox=len(self.work),
            info={"mode": "pop-orderly" if self.orderly else "pop", "workers": self.concurrency,
                  "busy": self.busy, "consumed": self.dispatcher.consumed,
                  "failed": self.dispatcher.failed, "retried": self.retried,
                  "dead": self.dead, "expired": self.expired},
        )  # fmt: skip
