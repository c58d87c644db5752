"""Consumers with a namespace, as the Java client's: on the wire every resource is wrapped
(``ns%orders``, ``%RETRY%ns%group``, ``%DLQ%ns%group`` - NamespaceUtil.wrapNamespace), and the
application sees its own names - delivered messages, lite-pull queues, rebalance listener
(withoutNamespace, DefaultMQPushConsumerImpl.resetRetryAndNamespace). Before: messages came as
``ns%orders``, PullConsumer.queues() gave wrapped queues, and ``%DLQ%g`` became ``ns%%DLQ%g``."""

from __future__ import annotations

import anyio
import pytest

from rocketmq_actors.cluster.options import ClientOptions
from rocketmq_actors.consumer.pull import PullConsumer, PullOptions, PullStatus
from rocketmq_actors.consumer.push import ConsumeFrom, PushConsumer, PushOptions
from rocketmq_actors.producer import Message, Producer, create_topic
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.records import MessageExt

pytestmark = pytest.mark.integration

NS = "ns1"


async def test_push_consumer_delivers_its_own_names_and_retries_through_the_wrapped_topics(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    async with Producer(namesrv=rocketmq_namesrv, client=ClientOptions(namespace=NS)) as producer:
        await create_topic(producer.instance, f"{NS}%{unique_topic}", queues=1)
        await producer.send(Message(topic=unique_topic, body=b"ok", keys="ok"))
        await producer.send(Message(topic=unique_topic, body=b"fail", keys="fail"))
    seen: list[tuple[str, str, int]] = []  # (key, topic as delivered, reconsume times)
    done = anyio.Event()

    async def handle(message: MessageExt) -> None:
        seen.append((message.keys[0], message.topic, message.reconsume_times))
        if message.keys[0] == "fail" and message.reconsume_times == 0:
            raise RuntimeError("once")  # sent back through %RETRY%ns1%<group>
        if len(seen) == 3:
            done.set()

    async with PushConsumer(
        group=unique_group,
        handler=handle,
        subscriptions={unique_topic: "*"},
        namesrv=rocketmq_namesrv,
        options=PushOptions(consume_from=ConsumeFrom.FIRST_OFFSET, retry_delay_level=1),
        client=ClientOptions(namespace=NS),
    ) as consumer:  # fmt: skip
        with anyio.fail_after(40):
            await done.wait()
        assert consumer._group.retry_topic == f"%RETRY%{NS}%{unique_group}"
    assert sorted(seen) == [("fail", unique_topic, 0), ("fail", unique_topic, 1),
                            ("ok", unique_topic, 0)]  # fmt: skip


async def test_pull_consumer_takes_and_gives_queues_without_the_namespace(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    async with Producer(namesrv=rocketmq_namesrv, client=ClientOptions(namespace=NS)) as producer:
        await create_topic(producer.instance, f"{NS}%{unique_topic}", queues=2)
        for i in range(6):
            await producer.send(Message(topic=unique_topic, body=b"%d" % i))
    async with PullConsumer(
        group=unique_group, namesrv=rocketmq_namesrv,
        options=PullOptions(auto_offset_reset="earliest"), client=ClientOptions(namespace=NS),
    ) as consumer:  # fmt: skip
        queues = await consumer.queues(unique_topic)
        assert queues == [MessageQueue(unique_topic, "broker-a", i) for i in (0, 1)]
        await consumer.assign(queues)
        assert consumer.assignment() == set(queues)
        got: dict[MessageQueue, list[MessageExt]] = {}
        with anyio.fail_after(20):
            while sum(len(v) for v in got.values()) < 6:
                for queue, records in (await consumer.getmany(timeout=5)).items():
                    got.setdefault(queue, []).extend(records)
        assert set(got) <= set(queues)
        assert {m.topic for v in got.values() for m in v} == {unique_topic}
        assert sum(consumer.position(q) for q in queues) == 6
        await consumer.commit()
        assert sum([await consumer.committed(q) or 0 for q in queues]) == 6
        result = await consumer.pull(queues[0], 0, max_messages=1)
        assert result.status is PullStatus.FOUND and result.messages[0].topic == unique_topic
