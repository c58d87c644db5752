"""With a broker's master gone, its slave serves what Java's consumer asks it for: consumer
offsets and pulls (MQClientInstance.findBrokerAddressInSubscribe with onlyThisBroker false;
PullAPIWrapper.updatePullFromWhichNode). Before: a queue assigned then could not start (its
offset query went to the master only), although the slave could serve every pull."""

from __future__ import annotations

from collections.abc import Callable

import anyio
import pytest

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.consumer.push import ConsumeFrom, PushConsumer, PushOptions
from rocketmq_actors.producer import Message, Producer, create_topic
from rocketmq_actors.protocol.codes import RequestCode, ResponseCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.protocol.headers import CreateTopicRequestHeader, PullMessageRequestHeader
from rocketmq_actors.protocol.messages import PullSysFlag
from rocketmq_actors.protocol.records import MessageExt, decode_messages
from rocketmq_actors.testing.cluster import FRESH_BROKER_TIMEOUT, LocalCluster

pytestmark = pytest.mark.integration

BODIES = [b"m%d" % i for i in range(10)]


async def _until_the_slave_has(namesrv: str, slave: str, topic: str) -> None:
    """Until the slave serves every message of the topic (asynchronous replication)."""
    header = PullMessageRequestHeader(
        consumer_group="G_slave_probe", topic=topic, queue_id=0, queue_offset=0,
        max_msg_nums=32, sys_flag=PullSysFlag.build(commit_offset=False, suspend=False,
        subscription=True), suspend_timeout_millis=0, subscription="*", expression_type="TAG",
    ).to_ext()  # fmt: skip
    async with ClientInstance(namesrv) as admin:
        with anyio.fail_after(60):
            while True:
                reply = await admin.request(
                    slave, RemotingCommand.request(RequestCode.PULL_MESSAGE, header)
                )
                if reply.code == ResponseCode.SUCCESS and len(
                    decode_messages(reply.body)) == len(BODIES):  # fmt: skip
                    return
                await anyio.sleep(0.5)  # polling the slave: it has no change event


async def _until_the_master_is_gone(namesrv: str, topic: str) -> None:
    async with ClientInstance(namesrv) as admin:
        with anyio.fail_after(60):  # the NameServer drops it when its connection closes
            while True:
                if (await admin.routes.refresh(topic)).master_addr("broker-a") is None:
                    return
                await anyio.sleep(0.2)  # polling the NameServer: it has no change event


async def test_with_the_master_gone_a_new_member_consumes_from_the_slave(
    rocketmq_cluster_factory: Callable[..., LocalCluster], unique_topic: str, unique_group: str
) -> None:
    # slaveReadEnable: a 5.x slave refuses pulls otherwise ([REJECTREQUEST]), Java's too
    cluster = rocketmq_cluster_factory(slave=True, broker_config={"slaveReadEnable": "true"})
    namesrv = cluster.namesrv_addr
    async with Producer(namesrv=namesrv, group="G_slave_feed") as producer:
        await create_topic(producer.instance, unique_topic, queues=1, timeout=FRESH_BROKER_TIMEOUT)
        if not cluster.spec.is_4x:
            # on a 5.x slave too: it would learn the topic only at its next sync from the
            # master (a 4.x slave refuses topic changes, and serves pulls without them)
            header = CreateTopicRequestHeader(topic=unique_topic, read_queue_nums=1,
                                              write_queue_nums=1).to_ext()  # fmt: skip
            reply = await producer.instance.request(
                cluster.broker("broker-a-s").addr,
                RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, header),
            )
            assert reply.code == ResponseCode.SUCCESS, reply.remark
        for body in BODIES:
            await producer.send(Message(topic=unique_topic, body=body))
    await _until_the_slave_has(namesrv, cluster.broker("broker-a-s").addr, unique_topic)
    cluster.kill_broker("broker-a")
    await _until_the_master_is_gone(namesrv, unique_topic)
    got: list[bytes] = []
    done = anyio.Event()

    async def handle(message: MessageExt) -> None:
        got.append(message.body)
        if len(got) == len(BODIES):
            done.set()

    async with PushConsumer(
        group=unique_group,
        subscriptions={unique_topic: "*"},
        handler=handle,
        namesrv=namesrv,
        options=PushOptions(consume_from=ConsumeFrom.FIRST_OFFSET),
    ):  # fmt: skip
        with anyio.fail_after(30):
            await done.wait()
    assert sorted(got) == sorted(BODIES)
