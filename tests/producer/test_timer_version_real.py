"""Timer delivery on a 4.x broker is refused (it would deliver at once); delay levels work."""

from __future__ import annotations

import pytest

from rocketmq_actors.errors import UnsupportedByBroker
from rocketmq_actors.producer import Message, Producer, SendStatus, create_topic
from rocketmq_actors.testing.cluster import LocalCluster

pytestmark = pytest.mark.integration


async def test_timer_messages_are_refused_on_4x(
    rocketmq_namesrv: str, unique_group: str, unique_topic: str, rocketmq_cluster: LocalCluster
) -> None:
    if not rocketmq_cluster.spec.is_4x:
        pytest.skip(  # 5.x delivers them: test_producer_real.py::test_timer_delivery
            "a 4.x broker is needed (run with --rocketmq-version 4.9.7)"
        )
    async with Producer(namesrv=rocketmq_namesrv, group=unique_group) as producer:
        await create_topic(producer.instance, unique_topic, queues=1)
        plain = await producer.send(Message(topic=unique_topic, body=b"plain"))
        timer = Message(topic=unique_topic, body=b"timer", delay_ms=3000)
        at = Message(topic=unique_topic, body=b"timer", deliver_at_ms=1)
        for msg in (timer, at):
            with pytest.raises(UnsupportedByBroker, match="runs V4_9_7") as info:
                await producer.send(msg)
            assert info.value.broker_version == "V4_9_7"
            with pytest.raises(UnsupportedByBroker):
                await producer.send_oneway(msg)
            future = await producer.submit(msg)
            with pytest.raises(UnsupportedByBroker):
                await future
        # none of the refused messages reached the (one-queue) topic: the next plain send
        # is stored right after the first
        again = await producer.send(Message(topic=unique_topic, body=b"plain"))
        assert again.queue == plain.queue and again.queue_offset == plain.queue_offset + 1
        # delay levels are a 4.x feature: still sent
        delayed = await producer.send(Message(topic=unique_topic, body=b"d", delay_level=1))
        assert delayed.status is SendStatus.SEND_OK
