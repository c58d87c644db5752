"""Chaos 3: orderly consumption across rebalances, checked with the chaos-suite order checker.

Twelve sharding keys, each sent strictly in sequence (seq n+1 only after n was acknowledged).
Consumer A consumes alone; consumer B joins (A hands half the queues over); then A leaves (B
takes everything). Per key, the acknowledged sends must appear in the delivery stream as a
subsequence: redelivery is allowed, a gap or a reordering is not.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio
import anyio.abc
import pytest
import structlog

from rocketmq_actors.consumer.push import ConsumeFrom, PushConsumer, PushOptions
from rocketmq_actors.errors import RocketMQError
from rocketmq_actors.producer import Message, Producer, create_topic
from rocketmq_actors.protocol.records import MessageExt
from rocketmq_actors.testing.faults import OrderChecker, Outcome, QueueChecker

from .conftest import ChaosReport
from .workload import outcome_of

pytestmark = [pytest.mark.integration, pytest.mark.chaos, pytest.mark.slow]

KEYS = [f"key-{n}" for n in range(12)]


class OrderedReceipts:
    def __init__(self, order: OrderChecker, queue: QueueChecker) -> None:
        self.order = order
        self.queue = queue
        self.by_consumer: dict[str, int] = {}
        self._changed = anyio.Event()

    def handler(self, name: str) -> Callable[[MessageExt], Awaitable[None]]:
        async def handle(message: MessageExt) -> None:
            key, seq = message.body.decode().split()
            self.order.record_receive(key, int(seq))
            self.queue.record_receive((key, int(seq)))
            self.by_consumer[name] = self.by_consumer.get(name, 0) + 1
            self._changed.set()
            self._changed = anyio.Event()

        return handle

    async def wait_for(self, name: str, count: int, limit: float = 60) -> None:
        with anyio.fail_after(limit):
            while self.by_consumer.get(name, 0) < count:
                await self._changed.wait()

    async def wait_for_all_acknowledged(self, limit: float = 60) -> None:
        with anyio.fail_after(limit):
            while self.queue.unreceived:  # O(1) per receipt (check() walks every key)
                await self._changed.wait()


async def test_order_checker_passes_across_two_rebalances(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str, chaos_report: ChaosReport
) -> None:
    order, queue = OrderChecker(), QueueChecker()
    receipts = OrderedReceipts(order, queue)
    stop = anyio.Event()

    def consumer(name: str) -> PushConsumer:
        return PushConsumer(
            group=unique_group,
            subscriptions={unique_topic: "*"},
            handler=receipts.handler(name),
            namesrv=rocketmq_namesrv,
            options=PushOptions(orderly=True, consume_from=ConsumeFrom.FIRST_OFFSET,
                                persist_interval=1.0),
        )  # fmt: skip

    async with Producer(namesrv=rocketmq_namesrv) as producer:
        await create_topic(producer.instance, unique_topic, queues=4)

        settled = anyio.Event()  # every sender saw `stop` and recorded its last outcome
        running = len(KEYS)

        async def send_in_sequence(key: str) -> None:
            nonlocal running
            seq = 0
            while not stop.is_set():
                message = Message(topic=unique_topic, body=f"{key} {seq}".encode())
                try:
                    await producer.send(message, sharding_key=key)
                    outcome = Outcome.OK
                except RocketMQError as exc:
                    outcome = outcome_of(exc)
                order.record_send(key, seq, outcome)
                queue.record_send((key, seq), outcome)
                seq += 1
                await anyio.sleep(0.01)  # pacing: ~100 messages a second per key
            running -= 1
            if not running:
                settled.set()

        leave, left = anyio.Event(), anyio.Event()

        async def consumer_a(*, task_status: anyio.abc.TaskStatus[None]) -> None:
            async with consumer("a"):
                task_status.started()
                await leave.wait()
            left.set()

        async with anyio.create_task_group() as tg:
            for key in KEYS:
                tg.start_soon(send_in_sequence, key)
            await tg.start(consumer_a)
            await receipts.wait_for("a", 300)
            async with consumer("b") as b:  # rebalance 1: A hands queues over to B
                await receipts.wait_for("b", 300)
                leave.set()  # rebalance 2: A leaves, B takes every queue
                await left.wait()
                a_total = receipts.by_consumer["a"]
                await receipts.wait_for("b", receipts.by_consumer["b"] + 500)
                assert len([q for q in b.assigned() if q.topic == unique_topic]) == 4
                stop.set()
                # a send in flight at stop() may still be acknowledged: wait for its outcome
                # (a fresh-clone run once checked first and missed two last messages)
                await settled.wait()
                await receipts.wait_for_all_acknowledged()

    result, delivered = order.check(), queue.check()
    structlog.get_logger("tests.chaos").info(
        "chaos.orderly_rebalance.result", keys=result.keys, sent=delivered.sent,
        received=delivered.received, duplicates=delivered.duplicates,
        by_consumer=receipts.by_consumer, violations=len(result.violations),
    )  # fmt: skip
    chaos_report.record("orderly consumption across two rebalances", delivered, order=result)
    assert result.keys == len(KEYS)
    assert result.violations == (), result.violations[:5]
    assert delivered.lost == () and delivered.unexpected == ()
    assert delivered.sent["ok"] >= 1000
    assert a_total >= 300 and receipts.by_consumer["b"] >= 800
