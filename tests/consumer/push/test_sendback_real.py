"""When CONSUMER_SEND_MSG_BACK is refused - here the message's broker was made read-only, the
usual step before draining it - the push consumer produces a copy to %RETRY%<group> on a
writable broker, as Java's DefaultMQPushConsumerImpl.sendMessageBack does, so the message is
redelivered with its reconsume count raised and reaches the DLQ in the end. Before: it was
retried locally for ever with the same count, holding the queue's commit offset back."""

from __future__ import annotations

from collections.abc import Sequence

import anyio
import pytest

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.consumer.push import ConsumeFrom, PushConsumer, PushOptions
from rocketmq_actors.consumer.push.concurrent import ConcurrentConsumeService
from rocketmq_actors.producer import Message, Producer, create_topic
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.codes import ResponseCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.protocol.records import MessageExt
from rocketmq_actors.testing.cluster import FRESH_BROKER_TIMEOUT, LocalCluster

pytestmark = pytest.mark.integration

UPDATE_BROKER_CONFIG = 25
READ_ONLY = 4  # PermName.PERM_READ
READ_WRITE = 6  # PERM_READ | PERM_WRITE, a broker's default


def _on_broker_a(queues: Sequence[MessageQueue], message: Message, arg: object) -> MessageQueue:
    return next(q for q in queues if q.broker_name == "broker-a")


async def _set_permission(namesrv: str, addr: str, permission: int) -> None:
    body = b"brokerPermission=%d\n" % permission
    command = RemotingCommand.request(UPDATE_BROKER_CONFIG, body=body)
    async with ClientInstance(namesrv) as admin:
        reply = await admin.request(addr, command)
    assert reply.code == ResponseCode.SUCCESS, reply.remark


async def test_a_refused_send_back_is_copied_to_the_retry_topic_on_another_broker(
    rocketmq_two_masters: LocalCluster, unique_topic: str, unique_group: str
) -> None:
    cluster = rocketmq_two_masters
    namesrv = cluster.namesrv_addr
    async with Producer(namesrv=namesrv, group="G_sendback_feed") as producer:
        await create_topic(producer.instance, unique_topic, queues=1, timeout=FRESH_BROKER_TIMEOUT)
        sent = await producer.send(Message(topic=unique_topic, body=b"payload", keys="k1"),
                                   selector=_on_broker_a)  # fmt: skip
    addr_a = next(b.addr for b in cluster.brokers if b.broker_name == "broker-a")
    seen: list[tuple[str, int, str]] = []  # (topic as delivered, reconsume times, broker)
    done = anyio.Event()

    async def handle(message: MessageExt) -> None:
        seen.append((message.topic, message.reconsume_times, message.broker_name))
        if message.reconsume_times == 0:
            await _set_permission(namesrv, addr_a, READ_ONLY)  # the send-back is refused
            raise RuntimeError("fails once")
        done.set()

    try:
        async with PushConsumer(
            group=unique_group,
            subscriptions={unique_topic: "*"},
            handler=handle,
            namesrv=namesrv,
            options=PushOptions(consume_from=ConsumeFrom.FIRST_OFFSET, retry_delay_level=1),
        ) as consumer:  # fmt: skip
            with anyio.fail_after(60):  # delay level 3 (10 s) for the copy, as Java's
                await done.wait()
            service = consumer._group.service
            assert isinstance(service, ConcurrentConsumeService)
            assert service.local_retries == 0
    finally:  # the shared cluster's next test finds broker-a writable
        await _set_permission(namesrv, addr_a, READ_WRITE)
    assert seen == [(unique_topic, 0, "broker-a"), (unique_topic, 1, "broker-b")]
    assert sent.queue.broker_name == "broker-a"
