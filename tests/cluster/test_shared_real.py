"""One ClientInstance per NameServer set and instance name in a process (issue 46), against
the real cluster: producers and consumers share its connections, a member of a group already
on it gets an instance of its own, a distinct instance name opts out, the last member to stop
stops it."""

from __future__ import annotations

import anyio
import pytest

from rocketmq_actors.cluster.options import ClientOptions
from rocketmq_actors.consumer.push import ConsumeFrom, PushConsumer, PushOptions
from rocketmq_actors.producer import Message, Producer, SendStatus
from rocketmq_actors.protocol.records import MessageExt
from rocketmq_actors.runtime.lifecycle import State

pytestmark = pytest.mark.integration


async def test_two_producers_share_one_instance_and_one_connection_per_broker(
    rocketmq_namesrv: str, unique_group: str, unique_topic: str
) -> None:
    first = Producer(namesrv=rocketmq_namesrv, group=f"{unique_group}_a")
    second = Producer(namesrv=rocketmq_namesrv, group=f"{unique_group}_b")
    assert first.instance is second.instance
    instance = first.instance
    async with first, second:
        for producer in (first, second):
            sent = await producer.send(Message(topic=unique_topic, body=b"shared"))
            assert sent.status is SendStatus.SEND_OK
        connections = instance.pool.statistics()["connections"]
        addrs = [c["addr"] for c in connections]
        assert len(addrs) == len(set(addrs))  # one connection per broker (and NameServer)
        assert instance.pool.connects == len(addrs)
        await first.stop()
        assert instance.state is State.RUNNING  # the second still uses it
        again = await second.send(Message(topic=unique_topic, body=b"after"))
        assert again.status is SendStatus.SEND_OK
    assert instance.state.value == "stopped"  # stopped with its last member
    # a member built afterwards gets a fresh one
    third = Producer(namesrv=rocketmq_namesrv, group=f"{unique_group}_a")
    assert third.instance is not instance
    async with third:
        assert (
            await third.send(Message(topic=unique_topic, body=b"x"))
        ).status is SendStatus.SEND_OK


async def test_a_consumer_shares_the_producers_instance_and_consumes(
    rocketmq_namesrv: str, unique_group: str, unique_topic: str
) -> None:
    got: list[bytes] = []
    done = anyio.Event()

    async def handle(message: MessageExt) -> None:
        got.append(message.body)
        done.set()

    producer = Producer(namesrv=rocketmq_namesrv, group=unique_group)
    consumer = PushConsumer(
        group=unique_group, subscriptions={unique_topic: "*"}, handler=handle,
        namesrv=rocketmq_namesrv, options=PushOptions(consume_from=ConsumeFrom.FIRST_OFFSET),
    )  # fmt: skip
    assert consumer.instance is producer.instance  # (a producer and a consumer group of one name)
    async with producer, consumer:
        await producer.send(Message(topic=unique_topic, body=b"one"))
        with anyio.fail_after(60):
            await done.wait()
    assert got == [b"one"]


async def test_two_consumers_of_one_group_each_get_an_instance(
    rocketmq_namesrv: str, unique_group: str, unique_topic: str
) -> None:
    async def handle(message: MessageExt) -> None:
        return None

    def consumer() -> PushConsumer:
        return PushConsumer(group=unique_group, subscriptions={unique_topic: "*"},
                            handler=handle, namesrv=rocketmq_namesrv)  # fmt: skip

    first, second = consumer(), consumer()
    assert first.instance is not second.instance
    assert first.instance.client_id != second.instance.client_id  # two members of the group
    async with first, second:
        assert first.running and second.running


async def test_a_distinct_instance_name_opts_out(
    rocketmq_namesrv: str, unique_group: str, unique_topic: str
) -> None:
    shared = Producer(namesrv=rocketmq_namesrv, group=f"{unique_group}_a")
    options = ClientOptions(namesrv=rocketmq_namesrv, instance_name=unique_group)
    named = Producer(group=f"{unique_group}_b", client=options)
    same_name = Producer(group=f"{unique_group}_c", client=options)
    assert named.instance is not shared.instance
    assert named.instance is same_name.instance  # (Java: one client id, one instance)
    assert named.instance.client_id.endswith(f"@{unique_group}")
    async with shared, named, same_name:
        for producer in (shared, named, same_name):
            sent = await producer.send(Message(topic=unique_topic, body=b"x"))
            assert sent.status is SendStatus.SEND_OK
