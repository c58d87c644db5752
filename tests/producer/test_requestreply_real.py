"""Request-reply against the real broker: a Python requester and a Python responder."""

from __future__ import annotations

from collections.abc import Sequence

import anyio
import pytest

from rocketmq_actors.consumer.push import ConsumeFrom, PushConsumer, PushOptions
from rocketmq_actors.errors import ReplyTimeout
from rocketmq_actors.producer import Message, Producer, create_topic
from rocketmq_actors.producer.requestreply import reply
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.records import MessageExt

pytestmark = pytest.mark.integration


async def test_a_python_responder_answers_a_python_requester(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    seen: list[MessageExt] = []
    consumer: PushConsumer | None = None

    async def respond(message: MessageExt) -> None:
        seen.append(message)
        assert consumer is not None
        await reply(consumer, message, b"re:" + message.body)

    async with Producer(namesrv=rocketmq_namesrv, group=f"{unique_group}_req") as requester:
        await create_topic(requester.instance, unique_topic, queues=2)
        consumer = PushConsumer(
            group=unique_group,
            subscriptions={unique_topic: "*"},
            handler=respond,
            namesrv=rocketmq_namesrv,
            options=PushOptions(consume_from=ConsumeFrom.FIRST_OFFSET),
        )  # fmt: skip
        async with consumer:
            with anyio.fail_after(60):
                first = await requester.request(Message(topic=unique_topic, body=b"a"), 30)
                futures = [
                    await requester.submit_request(Message(topic=unique_topic, body=b"%d" % i), 30)
                    for i in range(5)
                ]
                rest = [await f for f in futures]
    assert first.body == b"re:a" and first.topic == "DefaultCluster_REPLY_TOPIC"
    assert first.properties["MSG_TYPE"] == "reply"
    assert [r.body for r in rest] == [b"re:%d" % i for i in range(5)]
    request_ids = {m.properties["CORRELATION_ID"] for m in seen}
    assert {r.correlation_id for r in [first, *rest]} <= request_ids
    assert all(m.properties["REPLY_TO_CLIENT"] == requester.instance.client_id for m in seen)
    assert len(requester._group.replies) == 0 and requester._group.replies.replies == 6


async def test_a_request_nobody_answers_times_out_and_frees_its_entry(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    async with Producer(namesrv=rocketmq_namesrv, group=unique_group) as requester:
        await create_topic(requester.instance, unique_topic, queues=1)
        with anyio.fail_after(30), pytest.raises(ReplyTimeout):
            await requester.request(Message(topic=unique_topic, body=b"x"), timeout=2)
        assert len(requester._group.replies) == 0 and requester._group.replies.timeouts == 1


async def test_oneway_batch_and_request_go_to_the_queue_a_selector_picks(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    """Issue 44: Java's sendOneway(msg, selector/mq), send(Collection, mq) and
    request(msg, selector, arg): ours took no queue there. Every message below goes to queue 2
    of 4 (a selector that returns its ``arg``); the consumer sees them all there."""
    seen: list[MessageExt] = []
    consumer: PushConsumer | None = None
    everything = anyio.Event()

    async def respond(message: MessageExt) -> None:
        seen.append(message)
        if message.properties.get("REPLY_TO_CLIENT"):  # (the request)
            assert consumer is not None
            await reply(consumer, message, b"re:" + message.body)
        if len(seen) >= 6:
            everything.set()

    def chosen(queues: Sequence[MessageQueue], message: Message, arg: object) -> MessageQueue:
        return next(q for q in queues if q.queue_id == arg)

    async with Producer(namesrv=rocketmq_namesrv, group=f"{unique_group}_sel") as producer:
        await create_topic(producer.instance, unique_topic, queues=4)
        consumer = PushConsumer(
            group=unique_group, subscriptions={unique_topic: "*"}, handler=respond,
            namesrv=rocketmq_namesrv, options=PushOptions(consume_from=ConsumeFrom.FIRST_OFFSET),
        )  # fmt: skip
        async with consumer:
            with anyio.fail_after(60):
                await producer.send_oneway(
                    Message(topic=unique_topic, body=b"oneway"), selector=chosen, arg=2
                )
                batch = await producer.send_batch(
                    [Message(topic=unique_topic, body=b"b%d" % i) for i in range(3)],
                    selector=chosen, arg=2,
                )  # fmt: skip
                answer = await producer.request(
                    Message(topic=unique_topic, body=b"req"), 30, selector=chosen, arg=2
                )
                keyed = await producer.submit_request(
                    Message(topic=unique_topic, body=b"keyed"), 30, sharding_key="k"
                )
                await keyed
                await everything.wait()
    assert {r.queue.queue_id for r in batch} == {2}
    assert answer.body == b"re:req"
    by_body = {m.body: m.queue_id for m in seen}
    assert {by_body[b] for b in (b"oneway", b"b0", b"b1", b"b2", b"req")} == {2}
