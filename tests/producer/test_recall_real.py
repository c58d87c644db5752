"""Recall of timer messages against the real broker (5.3.2+; refused on 4.9.7)."""

from __future__ import annotations

import anyio
import pytest

from rocketmq_actors.consumer.push import ConsumeFrom, PushConsumer, PushOptions
from rocketmq_actors.errors import RecallTooLate, UnsupportedByBroker
from rocketmq_actors.producer import Message, Producer, create_topic
from rocketmq_actors.protocol.recall import RecallHandle
from rocketmq_actors.protocol.records import MessageExt
from rocketmq_actors.testing.cluster import LocalCluster

pytestmark = pytest.mark.integration


class _Inbox:
    def __init__(self) -> None:
        self.seen: list[MessageExt] = []
        self._changed = anyio.Event()

    async def handle(self, message: MessageExt) -> None:
        self.seen.append(message)
        self._changed.set()
        self._changed = anyio.Event()

    async def wait_for(self, body: bytes, timeout: float) -> None:
        with anyio.fail_after(timeout):
            while body not in [m.body for m in self.seen]:
                await self._changed.wait()


async def test_a_recalled_timer_message_is_never_delivered(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str, rocketmq_cluster: LocalCluster
) -> None:
    if rocketmq_cluster.spec.is_4x:
        pytest.skip("recall is a 5.3.2+ feature: test_recall_is_refused_on_4x")
    inbox = _Inbox()
    async with Producer(namesrv=rocketmq_namesrv, group=unique_group) as producer:
        await create_topic(producer.instance, unique_topic, queues=1)
        async with PushConsumer(
            group=unique_group,
            subscriptions={unique_topic: "*"},
            handler=inbox.handle,
            namesrv=rocketmq_namesrv,
            options=PushOptions(consume_from=ConsumeFrom.FIRST_OFFSET),
        ):  # fmt: skip
            plain = await producer.send(Message(topic=unique_topic, body=b"plain"))
            assert plain.recall_handle is None  # only timer messages get one
            await inbox.wait_for(b"plain", 30)  # the consumer reads the queue
            recalled = await producer.send(
                Message(topic=unique_topic, body=b"recalled", delay_ms=3000)
            )
            kept = await producer.send(Message(topic=unique_topic, body=b"kept", delay_ms=3500))
            assert recalled.recall_handle is not None and kept.recall_handle is not None
            handle = RecallHandle.decode(recalled.recall_handle)
            assert (handle.topic, handle.broker_name, handle.msg_id) == (
                unique_topic, recalled.queue.broker_name, recalled.msg_id,
            )  # fmt: skip
            result = await producer.recall(unique_topic, recalled.recall_handle)
            assert result.msg_id == recalled.msg_id and result.topic == unique_topic
            # "kept" is due half a second after "recalled" (the wheel has 1 s slots: at most
            # the same slot): once it is consumed, "recalled" would have been written before it
            await inbox.wait_for(b"kept", 30)
            with pytest.raises(RecallTooLate, match="timestamp invalid"):
                await producer.recall(unique_topic, kept.recall_handle)
            # and a plain message after it: the queue was read past any late "recalled"
            await producer.send(Message(topic=unique_topic, body=b"after"))
            await inbox.wait_for(b"after", 30)
    bodies = [m.body for m in inbox.seen]
    assert bodies.count(b"kept") == 1 and b"recalled" not in bodies
    (got,) = [m for m in inbox.seen if m.body == b"kept"]
    assert got.msg_id == kept.msg_id


async def test_recall_is_refused_on_4x(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str, rocketmq_cluster: LocalCluster
) -> None:
    if not rocketmq_cluster.spec.is_4x:
        pytest.skip("a 4.x broker is needed (run with --rocketmq-version 4.9.7)")
    async with Producer(namesrv=rocketmq_namesrv, group=unique_group) as producer:
        await create_topic(producer.instance, unique_topic, queues=1)
        plain = await producer.send(Message(topic=unique_topic, body=b"plain"))
        assert plain.recall_handle is None
        handle = RecallHandle(topic=unique_topic, broker_name=plain.queue.broker_name,
                              deliver_at_ms=4102444800000, msg_id=plain.msg_id)  # fmt: skip
        with pytest.raises(UnsupportedByBroker, match=r"5\.3\.2 or newer") as info:
            await producer.recall(unique_topic, handle.encode())
        assert info.value.broker_version == "V4_9_7"
