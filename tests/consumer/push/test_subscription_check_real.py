"""SQL92 subscriptions checked with the broker before consuming, as Java's
MQClientInstance.checkClientInBroker (CHECK_CLIENT_CONFIG) does at start: an expression the
broker cannot compile, or SQL92 on a broker with enablePropertyFilter=false, is a typed
error. Before: the consumer started and got every message unfiltered (the broker treats an
expression it cannot compile as match-all), or nothing, logging a pull failure eight times a
second for ever."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from rocketmq_actors.consumer.pull import MessageSelector, PullConsumer
from rocketmq_actors.consumer.push import PushConsumer
from rocketmq_actors.errors import InvalidSubscription
from rocketmq_actors.producer import Message, Producer, create_topic
from rocketmq_actors.protocol.records import MessageExt
from rocketmq_actors.testing.cluster import FRESH_BROKER_TIMEOUT, LocalCluster

pytestmark = pytest.mark.integration

BROKEN = "region = AND amount >"


async def _handler(message: MessageExt) -> None:
    raise AssertionError("nothing may be delivered")


async def _topic(namesrv: str, topic: str) -> None:
    async with Producer(namesrv=namesrv, group="G_check_feed") as producer:
        await create_topic(producer.instance, topic, queues=1, timeout=FRESH_BROKER_TIMEOUT)
        await producer.send(Message(topic=topic, body=b"x", properties={"region": "eu"}))


async def test_an_expression_the_broker_cannot_compile_is_refused_at_start(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    await _topic(rocketmq_namesrv, unique_topic)
    push = PushConsumer(namesrv=rocketmq_namesrv, group=unique_group, handler=_handler,
                        subscriptions={unique_topic: MessageSelector.by_sql(BROKEN)})  # fmt: skip
    with pytest.raises(InvalidSubscription, match="SQL92 expression 'region = AND amount >'"):
        async with push:
            pass
    async with PullConsumer(namesrv=rocketmq_namesrv, group=unique_group + "_pull") as pull:
        with pytest.raises(InvalidSubscription, match=unique_topic):
            await pull.subscribe({unique_topic: MessageSelector.by_sql(BROKEN)})
        assert pull.assignment() == set() and pull.subscription() == frozenset()
        await pull.subscribe({unique_topic: MessageSelector.by_sql("region = 'eu'")})  # fine


async def test_sql92_on_a_broker_without_property_filters_is_refused_at_start(
    rocketmq_cluster_factory: Callable[..., LocalCluster], unique_topic: str, unique_group: str
) -> None:
    cluster = rocketmq_cluster_factory(broker_config={"enablePropertyFilter": "false"})
    await _topic(cluster.namesrv_addr, unique_topic)
    sql = MessageSelector.by_sql("region = 'eu'")
    push = PushConsumer(namesrv=cluster.namesrv_addr, group=unique_group, handler=_handler,
                        subscriptions={unique_topic: sql})  # fmt: skip
    with pytest.raises(InvalidSubscription, match="does not support"):
        async with push:
            pass
    # tags need no check
    async with PushConsumer(namesrv=cluster.namesrv_addr, group=unique_group + "_tags",
                            handler=_handler, subscriptions={unique_topic: "nothing"}):  # fmt: skip
        pass
