"""PullConsumer's aiokafka-style API (subscribe/assign, getmany, seek, pause, commit) against
the real broker."""

from __future__ import annotations

import anyio
import pytest

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.consumer.core.admin import consumer_running_info, consumer_status
from rocketmq_actors.consumer.pull import OffsetReset, PullConsumer, PullOptions
from rocketmq_actors.errors import ClientStateError
from rocketmq_actors.producer import Message, Producer, create_topic
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.records import MessageExt

pytestmark = pytest.mark.integration


async def _send(namesrv: str, topic: str, bodies: list[bytes], queues: int = 4) -> None:
    async with Producer(namesrv=namesrv, group="G_lite_feed") as producer:
        await create_topic(producer.instance, topic, queues=queues)
        for body in bodies:
            await producer.send(Message(topic=topic, body=body))


async def _collect(consumer: PullConsumer, count: int, timeout: float = 30) -> list[MessageExt]:
    got: list[MessageExt] = []
    with anyio.fail_after(timeout):
        while len(got) < count:
            for records in (await consumer.getmany(timeout=1.0)).values():
                got += records
    return got


class Listener:
    def __init__(self) -> None:
        self.events: list[tuple[str, set[MessageQueue]]] = []
        self.changed = anyio.Event()

    async def on_queues_revoked(self, revoked: set[MessageQueue]) -> None:
        self.events.append(("revoked", revoked))
        self.changed.set()
        self.changed = anyio.Event()

    async def on_queues_assigned(self, assigned: set[MessageQueue]) -> None:
        self.events.append(("assigned", assigned))
        self.changed.set()
        self.changed = anyio.Event()


async def test_subscribe_getmany_commit_and_resume(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    bodies = [b"m%d" % i for i in range(40)]
    await _send(rocketmq_namesrv, unique_topic, bodies)
    async with PullConsumer(
        group=unique_group, namesrv=rocketmq_namesrv,
        options=PullOptions(auto_offset_reset=OffsetReset.EARLIEST),
    ) as consumer:  # fmt: skip
        await consumer.subscribe([unique_topic])
        assert len(consumer.assignment()) == 4
        first = await consumer.getmany(max_records=10, timeout=10)
        assert 0 < sum(len(r) for r in first.values()) <= 10
        rest = await _collect(consumer, 40 - sum(len(r) for r in first.values()))
        got = [m for r in first.values() for m in r] + rest
        assert sorted(m.body for m in got) == sorted(bodies)
        assert sum(consumer.position(q) for q in consumer.assignment()) == 40
    later = [b"n%d" % i for i in range(8)]
    await _send(rocketmq_namesrv, unique_topic, later)
    async with PullConsumer(
        group=unique_group, topics=[unique_topic], namesrv=rocketmq_namesrv
    ) as again:
        resumed = await _collect(again, 8)  # auto-commit on close: nothing seen twice
        assert sorted(m.body for m in resumed) == sorted(later)
        assert await again.getmany(timeout=0.5) == {}


async def test_two_members_split_the_queues_and_the_listener_hears_it(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    await _send(rocketmq_namesrv, unique_topic, [b"seed"])
    one, two = Listener(), Listener()
    async with PullConsumer(
        group=unique_group, topics=[unique_topic], listener=one, namesrv=rocketmq_namesrv
    ) as a:
        assert one.events == [("assigned", a.assignment())] and len(a.assignment()) == 4
        async with PullConsumer(
            group=unique_group, topics=[unique_topic], listener=two, namesrv=rocketmq_namesrv
        ) as b:
            # b's start returns after its own round; a hears of b through the broker's
            # NOTIFY_CONSUMER_IDS_CHANGED. The listener is told of a revocation before the
            # revoked queues' fetchers stop (so that it may still commit their positions):
            # the round is over once the rebalancer's lock is free again.
            assert len(b.assignment()) == 2
            with anyio.fail_after(30):
                while not any(kind == "revoked" for kind, _ in one.events):
                    await one.changed.wait()
                async with a._group.rebalancer.lock:
                    pass
            assert len(a.assignment()) == 2
            assert a.assignment().isdisjoint(b.assignment())
            assert one.events[-1][0] == "revoked" and one.events[-1][1] == b.assignment()
            bodies = [b"x%d" % i for i in range(40)]
            await _send(rocketmq_namesrv, unique_topic, bodies)
            got_a = await _collect(a, 1)
            got_b = await _collect(b, 1)
            everything = {m.body for m in got_a + got_b}
            with anyio.fail_after(30):
                while not everything >= set(bodies):
                    for consumer in (a, b):
                        for records in (await consumer.getmany(timeout=0.2)).values():
                            everything |= {m.body for m in records}


async def test_assign_seek_pause_resume_and_iterate(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    await _send(rocketmq_namesrv, unique_topic, [b"%d" % i for i in range(10)], queues=1)
    queue = MessageQueue(unique_topic, "broker-a", 0)
    async with PullConsumer(
        group=unique_group, namesrv=rocketmq_namesrv,
        options=PullOptions(auto_commit=False, auto_offset_reset="earliest"),
    ) as consumer:  # fmt: skip
        await consumer.assign([queue])
        assert consumer.position(queue) == 0
        got = await _collect(consumer, 10)
        assert [m.body for m in got] == [b"%d" % i for i in range(10)]
        consumer.seek(queue, 7)
        assert [m.body for m in await _collect(consumer, 3)] == [b"7", b"8", b"9"]
        await consumer.seek_to_beginning()
        async for message in consumer:
            assert message.body == b"0" and consumer.position(queue) == 1
            break
        await consumer.seek_to_end()
        assert consumer.position(queue) == 10
        assert await consumer.offsets_for_times({queue: 0}) == {queue: 0}
        consumer.pause(queue)
        assert consumer.paused() == {queue}
        await _send(rocketmq_namesrv, unique_topic, [b"late"], queues=1)
        assert await consumer.getmany(timeout=1.0) == {}  # paused: nothing is returned
        consumer.resume(queue)
        assert [m.body for m in await _collect(consumer, 1)] == [b"late"]
        await consumer.commit()
        assert await consumer.committed(queue) == 11
        with pytest.raises(ValueError, match="not assigned"):
            consumer.seek(MessageQueue(unique_topic, "broker-a", 9), 0)
        with pytest.raises(ClientStateError, match="unsubscribe"):
            await consumer.subscribe([unique_topic])


async def test_a_lite_pull_member_answers_the_brokers_queries_as_java_does(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    """GET_CONSUMER_STATUS_FROM_CLIENT (221) gets an empty table and GET_CONSUMER_RUNNING_INFO
    (307) the member's properties and positions, as DefaultLitePullConsumerImpl answers, so
    mqadmin's consumerStatus and consumerRunningInfo work for Python members too (they got
    SYSTEM_ERROR before)."""
    await _send(rocketmq_namesrv, unique_topic, [b"m%d" % i for i in range(8)])
    async with (
        PullConsumer(
            group=unique_group,
            topics=[unique_topic],
            namesrv=rocketmq_namesrv,
            options=PullOptions(auto_offset_reset="earliest"),
        ) as consumer,  # fmt: skip
        ClientInstance(rocketmq_namesrv) as admin,
    ):
        await _collect(consumer, 8)
        me = consumer.instance.client_id
        assert await consumer_status(admin, unique_topic, unique_group) == {me: {}}
        info = await consumer_running_info(admin, unique_topic, unique_group, me)
        assert info.properties["PROP_CONSUME_TYPE"] == "CONSUME_ACTIVELY"
        assert unique_topic in info.subscriptions
        assert len(info.queues) == 4
