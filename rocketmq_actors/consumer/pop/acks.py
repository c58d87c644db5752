"""A POP consumer's acks, batched: the ``acks`` actor.

Consumed messages are not acked one request each (Java's push consumer in pop mode acks each
with ACK_MESSAGE); their handles are collected per (topic, broker) and sent together as one
BATCH_ACK_MESSAGE (Java's ``MQClientAPIImpl.batchAckMessageAsync``) when ``batch_size`` are
waiting or ``interval`` passed since the first. A broker that does not know BATCH_ACK_MESSAGE
gets them one by one with ACK_MESSAGE from then on. A batch that fails on the network is tried
again at the next flush while its handles are still valid (before their invisible time ends:
after it, the broker delivers the message again anyway, and the ack would be refused).

The consumer flushes what is left when it stops (:meth:`Acker.flush`), after its handlers.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import anyio
from anyio.abc import TaskStatus

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.consumer.pop import calls as pop_calls
from rocketmq_actors.errors import BrokerError, RocketMQError
from rocketmq_actors.logs import get_logger
from rocketmq_actors.protocol.codes import ResponseCode
from rocketmq_actors.protocol.pop import ExtraInfo
from rocketmq_actors.runtime.signal import Signal
from rocketmq_actors.runtime.tree import Node

__all__ = ["Acker"]

log = get_logger("rocketmq_actors.consumer")

Key = tuple[str, str]  # (topic, broker name)


class Acker:
    def __init__(
        self,
        instance: ClientInstance,
        group: str,
        *,
        batch_size: int,
        interval: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.instance, self.group = instance, group
        self.batch_size, self.interval = batch_size, interval
        self._clock = clock
        self._pending: dict[Key, list[ExtraInfo]] = {}
        self._count = 0
        self._full = Signal()
        self._no_batch: set[str] = set()  # brokers that refused BATCH_ACK_MESSAGE
        self.acked = 0
        self.refused = 0  # the broker no longer knew the handle
        self.expired = 0  # dropped: invisible before the ack could be sent

    @property
    def pending(self) -> int:
        return self._count

    def add(self, topic: str, handle: ExtraInfo) -> None:
        self._pending.setdefault((topic, handle.broker_name), []).append(handle)
        self._count += 1
        if self._count >= self.batch_size:
            self._full.set()

    async def run(self, *, task_status: TaskStatus[Acker]) -> None:
        """The actor: flush every ``interval``, or as soon as a batch is full."""
        task_status.started(self)
        while True:
            if self._count < self.batch_size:
                with anyio.move_on_after(self.interval):
                    await self._full.wait()
            await self.flush()

    async def flush(self) -> None:
        """Send every waiting ack (the stop calls it last, within its deadline)."""
        pending, self._pending, self._count = self._pending, {}, 0
        batches = list(pending.items())
        for index, ((topic, broker), handles) in enumerate(batches):
            try:
                unsent, error = await self._send(topic, broker, handles)
            except BaseException:  # cancelled (the stop) or crashed mid-flush: the acks not
                for (left_topic, _), left in batches[index:]:  # known sent wait for the next
                    for handle in left:  # flush (the stop's last); a repeated ack is refused
                        self.add(left_topic, handle)
                raise
            if not unsent:
                continue
            now_ms = self._clock() * 1000
            valid = [h for h in unsent if h.pop_time + h.invisible_time > now_ms]
            self.expired += len(unsent) - len(valid)
            log.info("consumer.pop.ack_failed", group=self.group, broker=broker,
                     count=len(unsent), retry=len(valid), error=str(error))  # fmt: skip
            for handle in valid:
                self.add(topic, handle)

    async def _send(
        self, topic: str, broker: str, handles: list[ExtraInfo]
    ) -> tuple[list[ExtraInfo], RocketMQError | None]:
        """Ack ``handles``; those not sent, and why."""
        if broker not in self._no_batch and len(handles) > 1:
            try:
                ok = await pop_calls.batch_ack(self.instance, self.group, topic, handles)
            except BrokerError as exc:
                if exc.code != ResponseCode.REQUEST_CODE_NOT_SUPPORTED:
                    return handles, exc
                self._no_batch.add(broker)
            except RocketMQError as exc:
                return handles, exc
            else:
                self.count_acks(len(handles), ok)
                return [], None
        for i, handle in enumerate(handles):
            try:
                ok = await pop_calls.ack(self.instance, self.group, topic, handle)
            except RocketMQError as exc:
                return handles[i:], exc
            self.count_acks(1, ok)
        return [], None

    def count_acks(self, count: int, ok: bool) -> None:
        if ok:
            self.acked += count
        else:
            self.refused += count
            log.info("consumer.pop.ack_refused", group=self.group, count=count)

    def describe(self) -> Node:
        return Node(name="acks", kind="pop-acker", mailbox=self._count,
                    info={"acked": self.acked, "refused": self.refused,
                          "expired": self.expired})  # fmt: skip
