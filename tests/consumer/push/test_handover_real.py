"""A failure on a queue already handed over is not sent back (Java's
ConsumeMessageConcurrentlyService.processConsumeResult returns at once for a dropped process
queue): the new owner consumes that message from the committed offset, and a copy through
%RETRY% would make it twice."""

from __future__ import annotations

from collections.abc import Sequence

import anyio
import pytest

from rocketmq_actors.consumer.push import ConsumeFrom, PushConsumer, PushOptions
from rocketmq_actors.producer import Message, Producer, create_topic
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.records import MessageExt

pytestmark = pytest.mark.integration


def _to_queue(queues: Sequence[MessageQueue], message: Message, arg: object) -> MessageQueue:
    return next(q for q in queues if q.queue_id == arg)


async def test_a_failure_on_a_queue_handed_over_meanwhile_is_not_sent_back(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    async with Producer(namesrv=rocketmq_namesrv, group="G_handover_feed") as producer:
        await create_topic(producer.instance, unique_topic, queues=2)
        for queue_id in (0, 1):
            await producer.send(Message(topic=unique_topic, body=b"x%d" % queue_id),
                                selector=_to_queue, arg=queue_id)  # fmt: skip
    release = anyio.Event()
    both_running = anyio.Event()
    running: set[int] = set()
    changed = anyio.Event()
    second_got: list[int] = []

    def change(*_: object) -> None:
        nonlocal changed
        changed.set()
        changed = anyio.Event()

    async def first_handler(message: MessageExt) -> None:
        running.add(message.queue_id)
        if len(running) == 2:
            both_running.set()
        await release.wait()
        raise RuntimeError("fails after its queue was handed over (on one of the two)")

    async def second_handler(message: MessageExt) -> None:
        second_got.append(message.queue_id)
        change()

    def topic_queues(consumer: PushConsumer) -> list[MessageQueue]:
        return [q for q in consumer.assigned() if q.topic == unique_topic]

    async with PushConsumer(
        group=unique_group,
        subscriptions={unique_topic: "*"},
        handler=first_handler,
        on_rebalance=change,
        namesrv=rocketmq_namesrv,
        options=PushOptions(consume_from=ConsumeFrom.FIRST_OFFSET),
    ) as first:  # fmt: skip
        sent_back: list[int] = []
        send_back = first._group.send_back

        async def counting_send_back(message: MessageExt, delay_level: int) -> bool:
            sent_back.append(message.queue_id)
            change()
            return await send_back(message, delay_level)

        first._group.send_back = counting_send_back  # type: ignore[method-assign]
        with anyio.fail_after(30):
            await both_running.wait()
        async with PushConsumer(
            group=unique_group,
            subscriptions={unique_topic: "*"},
            handler=second_handler,
            on_rebalance=change,
            namesrv=rocketmq_namesrv,
            options=PushOptions(consume_from=ConsumeFrom.FIRST_OFFSET),
        ) as second:  # fmt: skip
            with anyio.fail_after(30):
                while len(topic_queues(first)) != 1 or len(topic_queues(second)) != 1:
                    await changed.wait()
            kept, handed = topic_queues(first)[0].queue_id, topic_queues(second)[0].queue_id
            release.set()  # both handlers fail now
            with anyio.fail_after(30):  # the new owner consumes the handed-over message
                while handed not in second_got:
                    await changed.wait()
            with anyio.fail_after(10):
                while kept not in sent_back:
                    await changed.wait()
            assert sent_back == [kept]  # the kept queue's failure only
