"""The broker's requests to a PushConsumer (220, 221, 307, 309), sent the way mqadmin does:
through the broker, which forwards them to the client and relays the answer."""

from __future__ import annotations

from collections.abc import Callable

import anyio
import pytest

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.consumer.core.admin import (
    consume_message_directly,
    consumer_running_info,
    consumer_status,
    reset_offsets_by_time,
)
from rocketmq_actors.consumer.push import ConsumeFrom, PushConsumer, PushOptions
from rocketmq_actors.producer import Message, Producer, create_topic
from rocketmq_actors.protocol.records import MessageExt
from rocketmq_actors.testing.cluster import FRESH_BROKER_TIMEOUT, LocalCluster

pytestmark = pytest.mark.integration


class Seen:
    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self._changed = anyio.Event()
        self.failures = 0

    async def handle(self, message: MessageExt) -> None:
        self._changed.set()
        self._changed = anyio.Event()
        if message.body == b"bad":
            self.failures += 1
            raise RuntimeError("refused")
        self.bodies.append(message.body)

    async def until(self, count: int, timeout: float = 30, *, failures: int = 0) -> None:
        with anyio.fail_after(timeout):
            while len(self.bodies) < count or self.failures < failures:
                await self._changed.wait()


async def test_status_running_info_consume_directly_and_reset(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    bodies = [b"m%d" % i for i in range(20)]
    seen = Seen()
    async with (
        Producer(namesrv=rocketmq_namesrv, group=f"{unique_group}_producer") as producer,
        ClientInstance(rocketmq_namesrv) as admin,
    ):
        await create_topic(producer.instance, unique_topic, queues=4, timeout=FRESH_BROKER_TIMEOUT)
        results = [await producer.send(Message(topic=unique_topic, body=b)) for b in bodies]
        async with PushConsumer(
            group=unique_group, subscriptions={unique_topic: "*"}, handler=seen.handle,
            namesrv=rocketmq_namesrv,
            options=PushOptions(consume_from=ConsumeFrom.FIRST_OFFSET, persist_interval=0.2,
                                pull_suspend=2),  # 5.x resets on the broker: the next pull learns
        ) as consumer:  # fmt: skip
            await seen.until(20)
            me = consumer.instance.client_id
            await consumer._group.offsets.persist(confirmed=True)  # the broker has them now
            assert await _committed(consumer, unique_topic) == 20

            status = await consumer_status(admin, unique_topic, unique_group)  # 223 -> 221
            assert list(status) == [me]
            assert sum(status[me].values()) == 20 and len(status[me]) == 4

            info = await consumer_running_info(admin, unique_topic, unique_group, me)  # 307
            assert info.properties["PROP_CONSUMEORDERLY"] == "false"  # the name mqadmin reads
            assert info.properties["consumed"] == "20"
            assert unique_topic in info.subscriptions
            assert f"%RETRY%{unique_group}" in info.subscriptions
            assert sum(q["commitOffset"] for mq, q in info.queues.items()
                       if mq.topic == unique_topic) == 20  # fmt: skip

            first = results[3]  # 309: the broker hands the stored message to the handler
            addr = await admin.routes.broker_addr(first.queue, master_only=True)
            direct = await consume_message_directly(
                admin, unique_group, me, first.offset_msg_id, addr
            )
            assert direct.result == "CR_SUCCESS" and seen.bodies[-1] == b"m3"
            bad = await producer.send(Message(topic=unique_topic, body=b"bad"))
            await seen.until(0, failures=1)  # consumed (and sent back) through the queues
            direct = await consume_message_directly(admin, unique_group, me, bad.offset_msg_id,
                                                    addr)  # fmt: skip
            assert direct.result == "CR_THROW_EXCEPTION"

            # 222: back to the start of the topic (5.x: on the broker, reported to the
            # consumer as OFFSET_MOVED by its next pull); everything is consumed again
            await _reset_and_reconsume(admin, consumer, seen, unique_topic, bodies)


async def _committed(consumer: PushConsumer, topic: str) -> int:
    return sum([await consumer._group.offsets.fetch(q) or 0 for q in consumer.assigned()
                if q.topic == topic])  # fmt: skip


async def _reset_and_reconsume(
    admin: ClientInstance, consumer: PushConsumer, seen: Seen, topic: str, bodies: list[bytes]
) -> None:
    before = len(seen.bodies)
    offsets = await reset_offsets_by_time(admin, topic, consumer.group, 0)
    assert sorted(offsets.values()) == [0, 0, 0, 0]
    # well within the 20 s rebalance interval: a moved queue restarts at once (it once
    # vanished when its actor ended before the move, and came back at the next round)
    await seen.until(before + len(bodies), timeout=10)
    assert sorted(seen.bodies[before:]) == sorted(bodies)


async def test_client_side_reset_through_reset_consumer_client_offset(
    rocketmq_cluster_factory: Callable[..., LocalCluster], unique_topic: str, unique_group: str
) -> None:
    """A broker without server-side reset (4.x, or 5.x configured so) computes the offsets and
    sends them to every client in RESET_CONSUMER_CLIENT_OFFSET (220)."""
    cluster = rocketmq_cluster_factory(broker_config={"useServerSideResetOffset": "false"})
    namesrv = cluster.namesrv_addr
    bodies = [b"r%d" % i for i in range(12)]
    seen = Seen()
    async with (
        Producer(namesrv=namesrv, group=f"{unique_group}_producer") as producer,
        ClientInstance(namesrv) as admin,
    ):
        await create_topic(producer.instance, unique_topic, queues=4, timeout=FRESH_BROKER_TIMEOUT)
        for body in bodies:
            await producer.send(Message(topic=unique_topic, body=body))
        async with PushConsumer(
            group=unique_group,
            subscriptions={unique_topic: "*"},
            handler=seen.handle,
            namesrv=namesrv,
            options=PushOptions(consume_from=ConsumeFrom.FIRST_OFFSET, persist_interval=0.2),
        ) as consumer:  # fmt: skip
            await seen.until(12)
            await consumer._group.offsets.persist(confirmed=True)  # a reset needs committed offsets
            assert await _committed(consumer, unique_topic) == 12
            await _reset_and_reconsume(admin, consumer, seen, unique_topic, bodies)
