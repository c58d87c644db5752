"""Java's retryAnotherBrokerWhenNotStoreOK (DefaultMQProducerImpl.sendDefaultImpl; default
false): a SYNC_MASTER whose slave is down stores the message and answers SLAVE_NOT_AVAILABLE
(or FLUSH_SLAVE_TIMEOUT);
with the option the send is made again on another broker - a duplicate, as documented."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from rocketmq_actors.producer import Message, Producer, ProducerOptions, SendStatus, create_topic
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.testing.cluster import FRESH_BROKER_TIMEOUT, LocalCluster

from .pull import pull

pytestmark = pytest.mark.integration

NOT_REPLICATED = {SendStatus.SLAVE_NOT_AVAILABLE, SendStatus.FLUSH_SLAVE_TIMEOUT}


async def test_not_stored_ok_is_returned_or_sent_again_elsewhere(
    rocketmq_cluster_factory: Callable[..., LocalCluster], unique_topic: str
) -> None:
    # a SYNC_MASTER that wants two in-sync replicas and has no slave: it stores the message,
    # waits 300 ms for a replica, then says so
    cluster = rocketmq_cluster_factory(brokers=2, broker_config={
        "brokerRole": "SYNC_MASTER", "totalReplicas": "2", "inSyncReplicas": "2",
        "slaveTimeout": "300", "syncFlushTimeout": "300",
    })  # fmt: skip
    namesrv = cluster.namesrv_addr
    async with Producer(namesrv=namesrv, options=ProducerOptions(retry_times=2)) as plain:
        await create_topic(plain.instance, unique_topic, queues=1, timeout=FRESH_BROKER_TIMEOUT)
        once = await plain.send(Message(topic=unique_topic, body=b"once"))
        assert once.status in NOT_REPLICATED  # stored, not replicated
    # 30 s: each attempt waits out slaveTimeout, and under make test's load three of them
    # once took longer than the default 3 s send timeout (two attempts, two copies)
    async with Producer(
        namesrv=namesrv,
        options=ProducerOptions(
            retry_times=2, send_timeout=30.0, retry_another_broker_when_not_store_ok=True
        ),
    ) as retrying:
        again = await retrying.send(Message(topic=unique_topic, body=b"again"))
        assert again.status in NOT_REPLICATED  # the last of three attempts
        stored: list[bytes] = []
        for broker in ("broker-a", "broker-b"):
            queue = MessageQueue(unique_topic, broker, 0)
            stored += [m.body for m in await pull(retrying.instance, queue, expect=3, timeout=3)]
    assert sorted(stored) == [b"again", b"again", b"again", b"once"]
