"""A push consumer that follows the broker's request mode (``client_rebalance=False``, Java's
``setClientRebalance(false)``) beside a Java member doing the same: an operator's switch of the
group to POP mid-run, and back to PULL, loses nothing. A 4.x broker has no request modes."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import anyio
import pytest

from rocketmq_actors import admin
from rocketmq_actors.consumer.core.message import ReceivedMessage
from rocketmq_actors.consumer.push import ConsumeFrom, PushConsumer, PushOptions
from rocketmq_actors.consumer.push.poplane import pop_retry_topic
from rocketmq_actors.errors import UnsupportedByBroker
from rocketmq_actors.producer import Message, Producer, create_topic
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.runtime.tree import Node
from rocketmq_actors.testing.cluster import FRESH_BROKER_TIMEOUT, LocalCluster

from ...java_client import JavaMember, java_member

pytestmark = pytest.mark.integration

QUEUES = 4


def _options() -> PushOptions:
    return PushOptions(client_rebalance=False, consume_from=ConsumeFrom.FIRST_OFFSET,
                       rebalance_interval=1.0, pull_suspend=3.0,
                       pop_invisible_time=20.0)  # fmt: skip


async def _until(condition: Callable[[], bool], what: str, timeout: float = 90) -> None:
    """Look at ``condition`` every 0.1 s until it holds (the members' rebalances and the Java
    member's lines have no event of ours to wait for)."""
    with anyio.fail_after(timeout):
        while not condition():  # noqa: ASYNC110 - other members' rebalances: no event here
            await anyio.sleep(0.1)


def _lane(tree: Node) -> Node:
    found = tree.find("pop-lane")
    assert found, "a broker-mode consumer has a pop lane in its tree"
    return found[0]


async def _send(producer: Producer, topic: str, prefix: str, count: int) -> set[str]:
    keys = {f"{prefix}{i}" for i in range(count)}
    for key in sorted(keys):
        await producer.send(Message(topic=topic, body=key.encode(), keys=key))
    return keys


async def test_a_switch_to_pop_and_back_is_followed_beside_a_java_member(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str, rocketmq_cluster: LocalCluster
) -> None:
    if rocketmq_cluster.spec.is_4x:
        pytest.skip("request modes need a 5.x broker (the 4.x refusal is tested here)")
    ours: Counter[str] = Counter()

    async def handle(message: ReceivedMessage[bytes]) -> None:
        ours[message.keys[0]] += 1

    def seen(member: JavaMember) -> set[str]:
        return set(ours) | {m["key"] for m in member.messages}

    async with Producer(namesrv=rocketmq_namesrv, group=f"{unique_group}_p") as producer:
        instance = producer.instance
        await create_topic(instance, unique_topic, queues=QUEUES, timeout=FRESH_BROKER_TIMEOUT)
        first = await _send(producer, unique_topic, "a", 40)
        async with (
            PushConsumer(group=unique_group, subscriptions={unique_topic: "*"}, handler=handle,
                         namesrv=rocketmq_namesrv, options=_options()) as consumer,
            java_member(rocketmq_namesrv, unique_topic, unique_group,
                        broker_rebalance=True) as member,
        ):  # fmt: skip
            # PULL (the broker's default): the broker splits the queues between the members
            await _until(lambda: first <= seen(member), "the first messages")
            every = set((await instance.routes.get(unique_topic)).subscribe_queues)

            def topic_queues() -> set[MessageQueue]:
                return {q for q in consumer.assigned() if q.topic == unique_topic}

            await _until(lambda: 0 < len(topic_queues()) < len(every), "the split")
            assert all(q.queue_id >= 0 for q in consumer.assigned())

            await admin.set_message_request_mode(instance, unique_group, unique_topic, "POP")
            # POP, every member pops every queue of each broker (popShareQueueNum 0)
            await _until(
                lambda: (
                    {q.queue_id for q in consumer.assigned() if q.topic == unique_topic} == {-1}
                ),
                "the switch to POP",
            )
            assert pop_retry_topic(unique_topic, unique_group) not in {
                s.topic for s in consumer.subscriptions()
            }
            # both members pop every queue: which one gets a round of messages is whose pop
            # the broker holds when they arrive, so rounds go until ours has had some
            second: set[str] = set()
            for batch in range(10):
                sent = await _send(producer, unique_topic, f"b{batch}-", 20)
                second.update(sent)
                await _until(lambda: second <= seen(member), "the messages sent in POP mode")
                if not sent.isdisjoint(ours):
                    break
            assert not second.isdisjoint(ours), "ours popped none of ten rounds"
            # and acked them to the broker (acks leave in batches: wait for the first)
            await _until(lambda: _lane(consumer.tree()).info["acked"] > 0, "our acks")

        java_keys = {m["key"] for m in member.messages}
        assert (first | second) <= set(ours) | java_keys  # nothing lost by the switch

        # alone, and back to PULL: ours pulls every queue, and its POP retry topic too
        async with PushConsumer(group=unique_group, subscriptions={unique_topic: "*"},
                                handler=handle, namesrv=rocketmq_namesrv,
                                options=_options()) as consumer:  # fmt: skip
            await admin.set_message_request_mode(instance, unique_group, unique_topic, "PULL")
            await _until(lambda: every <= set(consumer.assigned()), "the switch back to PULL")
            assert pop_retry_topic(unique_topic, unique_group) in {
                s.topic for s in consumer.subscriptions()
            }
            third = await _send(producer, unique_topic, "c", 20)
            await _until(lambda: third <= set(ours), "the messages sent in PULL mode again")


async def test_following_the_brokers_mode_is_refused_by_4x(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str, rocketmq_cluster: LocalCluster
) -> None:
    if not rocketmq_cluster.spec.is_4x:
        pytest.skip("a 4.x broker is needed (run with --rocketmq-version 4.9.7)")

    async def handle(message: ReceivedMessage[bytes]) -> None:
        pass

    async with Producer(namesrv=rocketmq_namesrv, group=f"{unique_group}_p") as producer:
        await create_topic(producer.instance, unique_topic, queues=1, timeout=FRESH_BROKER_TIMEOUT)
    with pytest.raises(UnsupportedByBroker, match=r"client_rebalance=False") as info:
        async with PushConsumer(
            group=unique_group,
            subscriptions={unique_topic: "*"},
            handler=handle,
            namesrv=rocketmq_namesrv,
            options=_options(),
        ):
            pass  # fmt: skip
    assert info.value.broker_version.startswith("V4_")
