from __future__ import annotations

import json
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.consumer.core.offsets import (
    CONFIRMED_IN_FLIGHT,
    RESEND_EVERY,
    LocalOffsetStore,
    OffsetFileError,
    RemoteOffsetStore,
)
from rocketmq_actors.producer import create_topic
from rocketmq_actors.protocol.bodies import ConsumerData, MessageQueue, SubscriptionData
from rocketmq_actors.protocol.codes import ResponseCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.runtime.mailbox import Mailbox
from rocketmq_actors.testing.cluster import LocalCluster

Q0 = MessageQueue("t", "broker-a", 0)
Q1 = MessageQueue("t", "broker-a", 1)
CID = "10.0.0.1@worker-1"


class Routes:
    async def broker_addr(self, queue: MessageQueue, *, master_only: bool) -> str:
        return "127.0.0.1:10911"


class Instance:
    """What RemoteOffsetStore calls on a client instance: the commits it sends, recorded."""

    def __init__(self) -> None:
        self.routes = Routes()
        self.sent: list[tuple[int, int]] = []  # (queue id, offset), one-way or confirmed

    async def oneway(self, addr: str, cmd: RemotingCommand) -> None:
        self.sent.append((int(cmd.ext_fields["queueId"]), int(cmd.ext_fields["commitOffset"])))

    async def request(self, addr: str, cmd: RemotingCommand) -> RemotingCommand:
        await self.oneway(addr, cmd)
        return cmd.response(ResponseCode.SUCCESS)


async def test_a_periodic_persist_sends_what_moved_and_everything_now_and_then() -> None:
    """An idle queue costs no request a persist (each idle queue once cost one every
    persist); each offset goes again every RESEND_EVERY persists, and a confirmed persist
    (a hand-over, a stop) sends every offset asked."""
    instance = Instance()
    store = RemoteOffsetStore(instance, "g")  # type: ignore[arg-type]
    store.update(Q0, 5)
    store.update(Q1, 7)
    await store.persist([Q0, Q1])
    assert instance.sent == [(0, 5), (1, 7)]
    instance.sent.clear()
    store.update(Q1, 9)
    await store.persist([Q0, Q1])
    assert instance.sent == [(1, 9)]  # Q0 did not move
    instance.sent.clear()
    for _ in range(RESEND_EVERY - 3):
        await store.persist([Q0, Q1])
    assert instance.sent == []
    await store.persist([Q0, Q1])  # the RESEND_EVERY-th periodic persist
    assert instance.sent == [(0, 5), (1, 9)]
    instance.sent.clear()
    await store.persist([Q0], confirmed=True)
    assert instance.sent == [(0, 5)]
    store.remove(Q1)
    store.update(Q1, 9, increase_only=False)  # taken again later: sent again
    instance.sent.clear()
    await store.persist([Q0, Q1])
    assert instance.sent == [(1, 9)]


class SlowBroker(Instance):
    """Answers a topic's first confirmed commit at once (the broker makes the group's table
    for the topic then: two first commits at once may lose one); any other only once
    ``in_flight`` of them wait together (or the last ones): commits sent one after another
    would never get an answer."""

    def __init__(self, in_flight: int, total: int) -> None:
        super().__init__()
        self.waiting = 0
        self.most = 0
        self.in_flight, self.total = in_flight, total
        self.released = anyio.Event()
        self.tables: set[str] = set()
        self.creating: set[str] = set()
        self.racing = False  # two first commits of one topic at once

    async def request(self, addr: str, cmd: RemotingCommand) -> RemotingCommand:
        topic = cmd.ext_fields["topic"]
        if topic not in self.tables:  # the broker makes the topic's table meanwhile
            self.racing = self.racing or topic in self.creating
            self.creating.add(topic)
            await anyio.lowlevel.checkpoint()
            self.creating.discard(topic)
            self.tables.add(topic)
            return await super().request(addr, cmd)
        self.waiting += 1
        self.most = max(self.most, self.waiting)
        if self.waiting >= self.in_flight or len(self.sent) + self.waiting >= self.total:
            self.released.set()
        await self.released.wait()
        self.waiting -= 1
        return await super().request(addr, cmd)


async def test_a_confirmed_persist_of_many_queues_sends_its_commits_side_by_side() -> None:
    """Issue 43: a stop of 10,000 queues waited for 10,000 round trips one after another; the
    confirmed commits now go up to CONFIRMED_IN_FLIGHT at once, every one of them, each
    topic's first alone before the rest of that topic."""
    queues = [MessageQueue(t, "broker-a", i) for t in ("t1", "t2") for i in range(100)]
    instance = SlowBroker(CONFIRMED_IN_FLIGHT, len(queues))
    store = RemoteOffsetStore(instance, "g")  # type: ignore[arg-type]
    for i, queue in enumerate(queues):
        store.update(queue, i + 1)
    with anyio.fail_after(10):
        await store.persist(confirmed=True)
    assert sorted(instance.sent) == sorted((q.queue_id, i + 1) for i, q in enumerate(queues))
    assert instance.most == CONFIRMED_IN_FLIGHT
    assert instance.tables == {"t1", "t2"} and not instance.racing


def test_update_moves_forward_only_unless_told() -> None:
    store = LocalOffsetStore("/nonexistent-dir-never-written", CID, "g")
    store.update(Q0, 10)
    store.update(Q0, 7)  # a slow acknowledgement must not move the queue back
    assert store.read(Q0) == 10
    store.update(Q0, 3, increase_only=False)  # e.g. a reset
    assert store.read(Q0) == 3
    store.remove(Q0)
    assert store.read(Q0) is None


async def test_local_store_survives_a_restart(tmp_path: Path) -> None:
    store = LocalOffsetStore(tmp_path, CID, "g")
    assert await store.fetch(Q0) is None
    store.update(Q0, 42)
    store.update(Q1, 7)
    await store.persist()
    again = LocalOffsetStore(tmp_path, CID, "g")
    assert (await again.fetch(Q0), await again.fetch(Q1)) == (42, 7)
    # Java's layout (LocalFileOffsetStore): <dir>/<client id>/<group>/offsets.json, no temp files
    assert [p.name for p in (tmp_path / CID / "g").iterdir()] == ["offsets.json"]


async def test_local_store_persists_only_the_queues_asked(tmp_path: Path) -> None:
    store = LocalOffsetStore(tmp_path, CID, "g")
    store.update(Q0, 1)
    store.update(Q1, 2)
    await store.persist([Q0])
    assert await LocalOffsetStore(tmp_path, CID, "g").fetch(Q1) is None


def test_a_corrupt_offset_file_is_a_typed_error(tmp_path: Path) -> None:
    path = tmp_path / CID / "g" / "offsets.json"
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    with pytest.raises(OffsetFileError, match=r"offsets\.json"):
        LocalOffsetStore(tmp_path, CID, "g")
    path.write_text(json.dumps({"offsets": [{"topic": "t"}]}))
    with pytest.raises(OffsetFileError):
        LocalOffsetStore(tmp_path, CID, "g")


@pytest.mark.integration
async def test_remote_store_round_trip(
    rocketmq_namesrv: str, rocketmq_cluster: LocalCluster, unique_topic: str, unique_group: str
) -> None:
    async with ClientInstance(rocketmq_namesrv) as instance:
        await create_topic(instance, unique_topic, queues=2)
        queue = MessageQueue(unique_topic, "broker-a", 1)
        # the broker knows a group once a consumer heartbeat registered it
        await instance.routes.get(unique_topic)
        instance.register_consumer(
            unique_group,
            Mailbox("c"),
            lambda: ConsumerData(
                group=unique_group, consume_type="CONSUME_ACTIVELY", message_model="CLUSTERING",
                consume_from_where="CONSUME_FROM_LAST_OFFSET",
                subscriptions=(SubscriptionData(topic=unique_topic),),
            ),
        )  # fmt: skip
        await instance.heartbeat.beat()
        store = RemoteOffsetStore(instance, unique_group)
        # the group never committed: 5.x says so; 4.9 answers 0 for a queue whose messages
        # are all still in memory (the Java client then starts at 0 too)
        never = (None, 0) if rocketmq_cluster.spec.is_4x else (None,)
        assert await store.fetch(queue) in never
        store.update(queue, 5)
        await store.persist()
        # UPDATE_CONSUMER_OFFSET is one-way: read back until the broker has applied it
        for _ in range(50):
            if await RemoteOffsetStore(instance, unique_group).fetch(queue) == 5:
                break
        assert await RemoteOffsetStore(instance, unique_group).fetch(queue) == 5
