"""The trace dispatcher: batches, cuts, failures, and a full or stuck queue that never holds up
a send (fakes only: a send function of our own, a fake broker)."""

from __future__ import annotations

import time

import anyio
import pytest

from rocketmq_actors.cluster.options import ClientOptions
from rocketmq_actors.errors import ConnectError
from rocketmq_actors.metrics import METRICS
from rocketmq_actors.producer import Message, Producer
from rocketmq_actors.protocol.codes import RequestCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.protocol.messages import Property, decode_properties
from rocketmq_actors.protocol.trace import (
    RMQ_SYS_TRACE_TOPIC,
    PubRecord,
    SubBeforeRecord,
    decode_records,
    encode_record,
)
from rocketmq_actors.testing.fakeserver import FakePeer, FakeServer, route_body
from rocketmq_actors.trace import TraceDispatcher


def record(i: int, keys: str | None = None) -> SubBeforeRecord:
    return SubBeforeRecord(
        timestamp=1000 + i, region_id="DefaultRegion", group="G", request_id=f"R{i}",
        msg_id=f"M{i}", retry_times=0, keys=keys,
    )  # fmt: skip


class Sink:
    """A send function that keeps what it was given; ``gate`` holds every send until set."""

    def __init__(self, *, stuck: bool = False, fail_first: int = 0) -> None:
        self.sent: list[tuple[str, bytes, list[str]]] = []
        self.gate = anyio.Event()
        if not stuck:
            self.gate.set()
        self.fail_first = fail_first

    async def __call__(self, topic: str, body: bytes, keys: list[str]) -> None:
        await self.gate.wait()
        if self.fail_first:
            self.fail_first -= 1
            raise ConnectError("127.0.0.1:1", "refused")
        self.sent.append((topic, body, keys))


async def test_records_sent_as_one_trace_message_with_their_keys() -> None:
    sink = Sink()
    dispatcher = TraceDispatcher(sink, group="G", topic="TT", linger=60)
    async with anyio.create_task_group() as tg:
        await tg.start(dispatcher.run)
        for i in range(3):
            assert dispatcher.append(record(i, keys="a b" if i == 0 else None))
        with anyio.fail_after(5):  # (linger is 60 s: the flush sends at once)
            assert await dispatcher.flush(5)
        tg.cancel_scope.cancel()
    ((topic, body, keys),) = sink.sent
    assert topic == "TT"
    assert decode_records(body) == [record(0, "a b"), record(1), record(2)]
    assert keys == ["M0", "a", "b", "M1", "M2"]
    assert (dispatcher.sent, dispatcher.failed, dispatcher.dropped) == (3, 0, 0)


async def test_half_a_queue_is_sent_without_waiting_for_the_linger() -> None:
    sink = Sink()
    sent = anyio.Event()

    async def send(topic: str, body: bytes, keys: list[str]) -> None:
        await sink(topic, body, keys)
        sent.set()

    dispatcher = TraceDispatcher(send, group="G", topic="T", capacity=8, linger=3600)
    async with anyio.create_task_group() as tg:
        await tg.start(dispatcher.run)
        for i in range(4):
            dispatcher.append(record(i))
        with anyio.fail_after(5):
            await sent.wait()
        tg.cancel_scope.cancel()
    assert [len(decode_records(body)) for _, body, _ in sink.sent] == [4]


async def test_a_batch_is_cut_at_the_body_and_key_limits() -> None:
    one = len(encode_record(record(0))[0])
    sink = Sink()
    by_body = TraceDispatcher(sink, group="G", topic="T", max_body=one * 2, linger=60)
    by_keys = TraceDispatcher(sink, group="G", topic="K", max_keys=len("M0") * 3, linger=60)
    async with anyio.create_task_group() as tg:
        for dispatcher in (by_body, by_keys):
            await tg.start(dispatcher.run)
            for i in range(5):
                dispatcher.append(record(i))
            with anyio.fail_after(5):
                assert await dispatcher.flush(5)
        tg.cancel_scope.cancel()
    counts = [(topic, len(decode_records(body))) for topic, body, _ in sink.sent]
    # (Java cuts once a record takes the batch to the limit)
    assert counts == [("T", 2), ("T", 2), ("T", 1), ("K", 3), ("K", 2)]


async def test_a_failed_trace_send_is_counted_and_the_next_goes() -> None:
    before = METRICS.value("rocketmq_client_trace_records_total", group="GF", result="failed")
    sink = Sink(fail_first=1)
    dispatcher = TraceDispatcher(sink, group="GF", topic="T", linger=60)
    async with anyio.create_task_group() as tg:
        await tg.start(dispatcher.run)
        dispatcher.append(record(0))
        with anyio.fail_after(5):
            await dispatcher.flush(5)
        dispatcher.append(record(1))
        with anyio.fail_after(5):
            await dispatcher.flush(5)
        tg.cancel_scope.cancel()
    assert (dispatcher.failed, dispatcher.sent) == (1, 1)
    assert [decode_records(body) for _, body, _ in sink.sent] == [[record(1)]]
    after = METRICS.value("rocketmq_client_trace_records_total", group="GF", result="failed")
    assert after - before == 1


async def test_a_full_queue_drops_and_counts_without_waiting() -> None:
    before = METRICS.value("rocketmq_client_trace_dropped_total", group="GD")
    sink = Sink(stuck=True)  # the broker never answers the trace send
    dispatcher = TraceDispatcher(sink, group="GD", topic="T", capacity=3, linger=0)
    async with anyio.create_task_group() as tg:
        await tg.start(dispatcher.run)
        dispatcher.append(record(0))
        with anyio.fail_after(5):  # the actor took it and is stuck sending it
            while dispatcher.queued:
                await anyio.lowlevel.checkpoint()
        accepted = [dispatcher.append(record(i)) for i in range(1, 11)]  # (append never awaits)
        assert accepted == [True] * 3 + [False] * 7
        assert (dispatcher.dropped, dispatcher.queued) == (7, 3)
        assert METRICS.value("rocketmq_client_trace_dropped_total", group="GD") - before == 7
        started = time.monotonic()
        assert not await dispatcher.flush(0.2)  # bounded: the stop deadline is kept
        assert time.monotonic() - started < 2
        tg.cancel_scope.cancel()
    assert not sink.sent


class FakeCluster:
    """NameServer and broker in one: user sends answered at once (with a region, as a broker
    does); trace sends answered or never (``stall``)."""

    def __init__(self, *, stall_trace: bool, trace_on: str = "true") -> None:
        self.stall_trace, self.trace_on = stall_trace, trace_on
        self.addr = ""
        self.traces: list[RemotingCommand] = []
        self.trace_arrived = anyio.Event()

    async def __call__(self, peer: FakePeer, cmd: RemotingCommand) -> None:
        if cmd.code == RequestCode.GET_ROUTEINFO_BY_TOPIC:
            await peer.reply(cmd, body=route_body(("fake", self.addr)))
        elif cmd.code == RequestCode.SEND_MESSAGE_V2 and cmd.ext_fields["b"] == RMQ_SYS_TRACE_TOPIC:
            self.traces.append(cmd)
            self.trace_arrived.set()
            if self.stall_trace:
                await anyio.sleep_forever()
            await peer.reply(cmd, ext_fields={"msgId": "T", "queueId": "0", "queueOffset": "1"})
        elif cmd.code == RequestCode.SEND_MESSAGE_V2:
            ext = {
                "msgId": "7F00000100002A9F0000000000000A3C", "queueId": cmd.ext_fields["e"],
                "queueOffset": "1", "MSG_REGION": "DefaultRegion", "TRACE_ON": self.trace_on,
            }  # fmt: skip
            await peer.reply(cmd, ext_fields=ext)
        else:
            await peer.reply(cmd)


async def test_producer_writes_a_pub_record_for_a_send() -> None:
    fake = FakeCluster(stall_trace=False)
    async with FakeServer(fake) as server:
        fake.addr = server.addr
        async with Producer(
            namesrv=server.addr, group="PG", client=ClientOptions(trace=True)
        ) as producer:
            sent = await producer.send(Message(topic="orders", body=b"hello", tags="t", keys="k"))
            with anyio.fail_after(5):
                await fake.trace_arrived.wait()
    (cmd,) = fake.traces
    (pub,) = decode_records(cmd.body)
    assert isinstance(pub, PubRecord)
    assert (pub.group, pub.topic, pub.msg_id, pub.offset_msg_id) == (
        "PG", "orders", sent.msg_id, sent.offset_msg_id
    )  # fmt: skip
    assert (pub.tags, pub.keys, pub.body_length, pub.store_host, pub.success) == (
        "t", "k", 5, server.addr, True
    )  # fmt: skip
    props = decode_properties(cmd.ext_fields["i"])
    assert set(props[Property.KEYS].split(" ")) == {sent.msg_id, "k"}  # queryMsgTraceById's


async def test_no_pub_record_when_the_broker_switched_its_trace_off() -> None:
    fake = FakeCluster(stall_trace=False, trace_on="false")
    async with FakeServer(fake) as server:
        fake.addr = server.addr
        async with Producer(
            namesrv=server.addr, group="PO", client=ClientOptions(trace=True)
        ) as producer:
            sent = await producer.send(Message(topic="orders", body=b"hello"))
            assert sent.trace_on is False
            assert (
                producer._group.trace is not None and producer._group.trace.dispatcher.queued == 0
            )
    assert fake.traces == []  # (the stop flushed whatever there was: nothing)


@pytest.mark.parametrize("nowait", [False, True])
async def test_a_stuck_trace_broker_never_slows_a_send(nowait: bool) -> None:
    fake = FakeCluster(stall_trace=True)
    async with FakeServer(fake) as server:
        fake.addr = server.addr
        producer = Producer(
            namesrv=server.addr, group="PS", client=ClientOptions(trace=True, shutdown_timeout=1.0)
        )
        assert producer._group.trace is not None
        dispatcher = producer._group.trace.dispatcher
        dispatcher.capacity, dispatcher.linger = 5, 0
        async with producer:
            await producer.send(Message(topic="orders", body=b"0"))
            with anyio.fail_after(5):
                await fake.trace_arrived.wait()  # the dispatcher is stuck on it now
            with anyio.fail_after(5):  # each send is answered as if no trace were on
                for i in range(30):
                    message = Message(topic="orders", body=str(i).encode())
                    if nowait:
                        await (await producer.submit(message))
                    else:
                        await producer.send(message)
            # (a submitted send's record comes from its hooks' after_send, which the send's
            # callback calls soon after its future is resolved)
            await anyio.wait_all_tasks_blocked()
            assert dispatcher.queued == 5 and dispatcher.dropped == 25
            started = time.monotonic()
        assert time.monotonic() - started < 3  # the flush keeps to the stop deadline
    assert len(fake.traces) == 1
