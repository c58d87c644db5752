"""Auto-batching's joining and closing rules (:mod:`rocketmq_actors.producer.autobatch`), and a
refused batch against a fake broker (a real one cannot be told to refuse a batch)."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any, cast

import anyio
import attrs
import pytest

from rocketmq_actors.cluster.options import ClientOptions
from rocketmq_actors.errors import (
    BrokerError,
    ClientClosed,
    ConfigError,
    InvalidMessage,
    SendFailed,
)
from rocketmq_actors.hooks import SendContext, SendHook
from rocketmq_actors.producer import Message, Producer, ProducerOptions
from rocketmq_actors.producer.autobatch import Batch, Batcher
from rocketmq_actors.producer.prepare import Prepared, prepare
from rocketmq_actors.producer.queued import Queued
from rocketmq_actors.protocol.compression import CompressionType
from rocketmq_actors.protocol.messages import UniqueIdGenerator, encode_batch
from rocketmq_actors.protocol.sendframe import BatchBody
from rocketmq_actors.testing.fakeserver import FakeServer
from tests.conftest import BACKEND

from .fakes import Calls, FakeCluster

IDS = UniqueIdGenerator(ip=b"\x7f\x00\x00\x01")


@attrs.define
class Item:
    prepared: Prepared
    timeout: float | None = None
    future: Any = attrs.Factory(object)  # (what the batch holds of it; never awaited here)


def _prepared(message: Message, *, threshold: int = 4096) -> Prepared:
    return prepare(message, ids=IDS, namespace=None, max_size=4 * 1024 * 1024,
                   compress_threshold=threshold, compress_level=5,
                   compress_type=CompressionType.ZLIB)  # fmt: skip


def _batcher(max_bytes: int = 32 * 1024, max_delay: float = 0.0) -> Batcher:
    return Batcher(max_bytes=max_bytes, max_delay=max_delay, max_size=4 * 1024 * 1024, ids=IDS)


@asynccontextmanager
async def _batching(
    fake: FakeCluster,
    *,
    hooks: Sequence[SendHook] = (),
    namespace: str | None = None,
    **options: Any,
) -> AsyncIterator[Producer]:
    """A started auto-batching producer (group G, no batch delay, a stop that waits half a
    second for what is in flight) against ``fake``."""
    async with FakeServer(fake) as server:
        fake.addr = server.addr
        batching = ProducerOptions(auto_batch=True, batch_max_delay=0.0, **options)
        client = ClientOptions(shutdown_timeout=0.5, namespace=namespace)
        async with Producer(namesrv=server.addr, group="G", options=batching, client=client,
                            hooks=hooks) as producer:  # fmt: skip
            yield producer


def _add(batcher: Batcher, item: Item) -> Batch | None:
    return batcher.add(item.prepared, item.future, item.timeout, None)


def test_a_batch_body_is_the_records_of_its_messages_in_order() -> None:
    batcher = _batcher()
    messages = [
        Message(topic="T", body=b"plain"),
        Message(topic="T", body=b"tagged", tags="a", keys=["k1", "k2"], flag=3),
        Message(topic="T", body="ünï".encode(), properties={"p": "välue"}),
    ]
    items = [Item(_prepared(m)) for m in messages]
    opened = [_add(batcher, item) for item in items]
    assert opened[0] is not None and opened[1:] == [None, None]  # one batch, opened by the first
    batch = opened[0]
    prepared = batch.prepared()
    assert isinstance(prepared.body, BatchBody)
    expected = encode_batch((m.body, m.flag, i.prepared.properties)
                            for m, i in zip(messages, items, strict=True))  # fmt: skip
    assert bytes(prepared.body) == expected and prepared.size == len(expected)
    assert list(prepared.batch_ids) == [i.prepared.msg_id for i in items]
    assert (prepared.topic, prepared.properties, prepared.msg_id) == ("T", "", "")
    assert not batch.closed  # (under batch_max_bytes: a sender closes it when it takes it)


class _GivenIds(UniqueIdGenerator):
    """Gives the ids it was made with, in order (a plain message's is given at its batch's
    close)."""

    def __init__(self, ids: list[str]) -> None:
        super().__init__()
        self.given = ids

    def next_ids(self, count: int) -> list[str]:
        taken, self.given = self.given[:count], self.given[count:]
        return taken


def test_a_plain_message_joins_with_the_record_its_prepared_form_would_give() -> None:
    messages = [Message(topic="T", body=b"plain"), Message(topic="T", body=b"flagged", flag=7)]
    items = [Item(_prepared(m)) for m in messages]
    prepared = _batcher()
    plain = Batcher(max_bytes=32 * 1024, max_delay=0.0, max_size=4 * 1024 * 1024,
                    ids=_GivenIds([i.prepared.msg_id for i in items]))  # fmt: skip
    for message, item in zip(messages, items, strict=True):
        _add(prepared, item)
        assert plain.takes_plain(len(message.body))
        plain.add_plain(("T", "T"), message.flag, message.body, item.future, None, None)
    ((_, one),), ((_, other),) = prepared._open.items(), plain._open.items()
    assert other.ids == [None, None]  # (named when it is closed)
    prepared.close(one)
    plain.close(other)
    assert bytes(one.prepared().body) == bytes(other.prepared().body)
    assert one.ids == other.ids == [i.prepared.msg_id for i in items]
    assert one.futures == other.futures == [i.future for i in items]
    assert one.admitted == other.admitted == sum(len(m.body) for m in messages)
    assert plain.held == prepared.held == one.size
    assert not _batcher().takes_plain(4 * 1024 * 1024)  # (no room for its record)


def test_plain_and_prepared_messages_in_one_batch_keep_their_order_and_ids() -> None:
    messages = [
        Message(topic="T", body=b"p1"),
        Message(topic="T", body=b"tagged", tags="a"),
        Message(topic="T", body=b"p2", flag=2),
        Message(topic="T", body=b"p3"),
        Message(topic="T", body=b"keyed", keys=["k"]),
    ]
    items = [Item(_prepared(m)) for m in messages]
    mixed = Batcher(max_bytes=32 * 1024, max_delay=0.0, max_size=4 * 1024 * 1024,
                    ids=_GivenIds([items[i].prepared.msg_id for i in (0, 2, 3)]))  # fmt: skip
    for message, item in zip(messages, items, strict=True):
        if message.tags or message.keys:
            _add(mixed, item)
        else:
            mixed.add_plain(("T", "T"), message.flag, message.body, item.future, None, None)
    ((_, batch),) = mixed._open.items()
    assert batch.ids == [None, items[1].prepared.msg_id, None, None, items[4].prepared.msg_id]
    mixed.close(batch)
    mixed.close(batch)  # (closed twice: named once)
    expected = encode_batch((m.body, m.flag, i.prepared.properties)
                            for m, i in zip(messages, items, strict=True))  # fmt: skip
    assert bytes(batch.prepared().body) == expected
    assert batch.prepared().batch_ids == [i.prepared.msg_id for i in items]


def test_a_batch_names_its_plain_messages_with_distinct_ids_at_its_close() -> None:
    batcher = _batcher()
    for _ in range(300):  # (past a counter byte: next_ids' second form)
        batcher.add_plain(("T", "T"), 0, b"x", object(), None, None)  # type: ignore[arg-type]
    ((_, batch),) = batcher._open.items()
    batcher.close(batch)
    ids = batch.prepared().batch_ids
    assert len(set(ids)) == 300 and all(isinstance(i, str) and len(i) == 32 for i in ids)
    body = bytes(batch.prepared().body)
    assert all(f"UNIQ_KEY\x01{i}\x02".encode() in body for i in ids)


def test_topics_get_batches_of_their_own_and_a_full_batch_is_closed() -> None:
    batcher = _batcher(max_bytes=3000)
    first = _add(batcher, Item(_prepared(Message(topic="A", body=b"x" * 1000))))
    other = _add(batcher, Item(_prepared(Message(topic="B", body=b"x" * 1000))))
    assert first is not None and other is not None and first is not other
    assert _add(batcher, Item(_prepared(Message(topic="A", body=b"x" * 1000)))) is None
    assert _add(batcher, Item(_prepared(Message(topic="A", body=b"x" * 1000)))) is None
    assert first.closed and len(first.futures) == 3  # past 3000 bytes: closed, as it filled
    again = _add(batcher, Item(_prepared(Message(topic="A", body=b"y"))))
    assert again is not None and again is not first  # the next one opens another
    assert not other.closed


def test_no_batch_grows_past_the_largest_message() -> None:
    batcher = Batcher(max_bytes=10_000, max_delay=0.0, max_size=2500, ids=IDS)
    first = _add(batcher, Item(_prepared(Message(topic="A", body=b"x" * 1000))))
    assert _add(batcher, Item(_prepared(Message(topic="A", body=b"x" * 1000)))) is None
    third = _add(batcher, Item(_prepared(Message(topic="A", body=b"x" * 1000))))
    assert first is not None and third is not None and first.closed
    assert first.size <= 2500 and len(first.futures) == 2


def test_the_earliest_deadline_of_its_messages_is_the_batchs() -> None:
    batcher = _batcher()
    batch = _add(batcher, Item(_prepared(Message(topic="A", body=b"1"))))
    assert batch is not None and batch.timeout is None
    _add(batcher, Item(_prepared(Message(topic="A", body=b"2")), timeout=5.0))
    _add(batcher, Item(_prepared(Message(topic="A", body=b"3")), timeout=2.0))
    _add(batcher, Item(_prepared(Message(topic="A", body=b"4")), timeout=9.0))
    assert batch.timeout == 2.0


def test_past_the_bytes_held_in_unanswered_batches_messages_go_alone() -> None:
    batcher = Batcher(max_bytes=1500, max_delay=0.0, max_size=4 << 20, max_held=2000, ids=IDS)
    first = _add(batcher, Item(_prepared(Message(topic="A", body=b"x" * 1000))))
    second = _add(batcher, Item(_prepared(Message(topic="B", body=b"x" * 1000))))
    assert first is not None and second is not None and batcher.held > 2000
    message = _prepared(Message(topic="A", body=b"y"))
    assert not batcher.takes(message)  # (Java: tryAddMessage refuses, sendDirect)
    batcher.done(first)  # answered: its bytes are no longer held
    assert batcher.takes(message)


@pytest.mark.parametrize(
    ("message", "why"),
    [
        (Message(topic="A", body=b"d", delay_level=3), "a delay level"),
        (Message(topic="A", body=b"t", delay_ms=1000), "timer delivery"),
        (Message(topic="A", body=b"w", wait_store=False), "no wait for the store"),
        (Message(topic="A", body=b"z" * 5000), "compressed"),
        (Message(topic="%RETRY%G", body=b"r"), "a retry topic"),
    ],
)
def test_what_never_joins_a_batch(message: Message, why: str) -> None:
    assert not _batcher().takes(_prepared(message)), why


def test_a_message_too_large_to_share_a_frame_is_sent_alone() -> None:
    batcher = Batcher(max_bytes=1000, max_delay=0.0, max_size=1000, ids=IDS)
    assert batcher.takes(_prepared(Message(topic="A", body=b"x" * 900)))
    assert not batcher.takes(_prepared(Message(topic="A", body=b"x" * 990), threshold=0))


async def test_a_delay_holds_a_batch_until_it_fills_or_the_delay_passes() -> None:
    batcher = _batcher(max_bytes=3000, max_delay=30.0)
    batch = _add(batcher, Item(_prepared(Message(topic="A", body=b"x" * 1000))))
    assert batch is not None
    with anyio.fail_after(10):  # (a contract: filling it ends the 30 s wait at once)
        async with anyio.create_task_group() as tg:
            tg.start_soon(batcher.ready, batch)
            await anyio.lowlevel.checkpoint()
            assert not batch.closed  # the sender waits: later messages still join
            for _ in range(2):
                _add(batcher, Item(_prepared(Message(topic="A", body=b"x" * 1000))))
    assert batch.closed and len(batch.futures) == 3

    short = Batcher(max_bytes=3000, max_delay=0.05, max_size=4 * 1024 * 1024, ids=IDS)
    batch = _add(short, Item(_prepared(Message(topic="A", body=b"short"))))
    assert batch is not None
    with anyio.fail_after(10):
        await short.ready(batch)  # the delay passes: closed with what it has
    assert batch.closed and len(batch.futures) == 1


@pytest.mark.parametrize("end", ["close_all", "cancelled"])
async def test_a_delay_ended_by_a_stop_or_a_cancelled_sender_closes_the_batch(end: str) -> None:
    """``close_all`` (a stop) or the waiting sender's cancellation (its pool restarting) ends
    the wait, and the batch is closed: a later message opens a new one, rather than joining
    one that no sender will send."""
    batcher = _batcher(max_delay=30.0)
    batch = _add(batcher, Item(_prepared(Message(topic="A", body=b"1"))))
    assert batch is not None
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(batcher.ready, batch)
            await anyio.lowlevel.checkpoint()
            assert not batch.closed  # (waiting out the delay)
            if end == "close_all":
                batcher.close_all()
            else:
                tg.cancel_scope.cancel()
    assert batch.closed
    again = _add(batcher, Item(_prepared(Message(topic="A", body=b"2"))))
    assert again is not None and again is not batch


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"auto_batch": 1}, "auto_batch"),
        ({"batch_max_delay": -1}, "batch_max_delay"),
        ({"batch_max_delay": 31}, "batch_max_delay"),
        ({"batch_max_bytes": 0}, "batch_max_bytes"),
        ({"batch_max_bytes": 2 * 1024 * 1024 + 1}, "batch_max_bytes"),
        ({"total_batch_max_bytes": 0}, "total_batch_max_bytes"),
    ],
)
def test_bad_batch_options_are_config_errors(changes: dict[str, object], words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        ProducerOptions(**changes)  # type: ignore[arg-type]


async def test_a_refused_batch_fails_each_of_its_messages_with_the_brokers_answer() -> None:
    fake = FakeCluster("illegal")
    async with _batching(fake) as producer:
        futures = [producer.send_nowait(Message(topic="T", body=b"%d" % i)) for i in range(5)]
        with anyio.fail_after(10):
            flushed = await producer.flush()
        assert flushed.failed == 5 and producer.running
        errors = [f.exception() for f in futures]
        assert all(isinstance(e, SendFailed) and not e.outcome_unknown for e in errors)
        assert isinstance(errors[0], SendFailed)
        assert isinstance(errors[0].attempts[0], BrokerError)
        assert fake.batches == 1 and fake.sends == 0  # one frame for the five, not retried


@pytest.mark.skipif(BACKEND != "asyncio", reason="cancels an asyncio future: trio's waiter "
                    "is an event, left pending by a caller that gives up")  # fmt: skip
@pytest.mark.parametrize("answer", ["illegal", "ok"])
async def test_a_send_cancelled_in_a_batch_leaves_the_others_their_outcome(answer: str) -> None:
    fake = FakeCluster(answer)
    async with _batching(fake) as producer:
        futures = [producer.send_nowait(Message(topic="T", body=b"%d" % i)) for i in range(5)]
        cast(asyncio.Future[Any], futures[2]).cancel()  # (its caller gave up before the answer)
        with anyio.fail_after(10):
            await producer.flush()
        others = [f for i, f in enumerate(futures) if i != 2]
        assert futures[2].cancelled() and producer.running
        if answer == "ok":
            assert all(f.result().msg_id for f in others)
        else:  # the broker's refusal, not "stopped before the send completed"
            errors = [f.exception() for f in others]
            assert all(isinstance(e, SendFailed) for e in errors)
            assert all(isinstance(e.attempts[0], BrokerError) for e in errors)  # type: ignore[union-attr]


def test_a_batch_gives_its_frame_only_once_its_plain_messages_are_named() -> None:
    batcher = _batcher()
    batcher.add_plain(("T", "T"), 0, b"x", object(), None, None)  # type: ignore[arg-type]
    ((_, batch),) = batcher._open.items()
    with pytest.raises(AssertionError, match="once closed"):
        batch.prepared()
    batcher.close(batch)
    assert batch.prepared().batch_ids[0] is not None


@pytest.mark.skipif(BACKEND != "asyncio", reason="counts asyncio's futures: trio's waiter is "
                    "an event and a list of callbacks besides")  # fmt: skip
async def test_a_plain_message_in_a_batch_is_its_future_alone_and_leaves_nothing() -> None:
    """What the garbage collector tracks of a plain message in an auto-batch: its future only;
    no ``Prepared`` and no item of its own (each object a message in flight makes the
    collector run more often); and once answered, nothing of it is left (no cycle, and no
    sender task holds the batch it sent)."""
    fake = FakeCluster("ok")
    async with _batching(fake) as producer:
        await producer.send(Message(topic="T", body=b"warm"))  # (route and connection)
        messages = [Message(topic="T", body=b"x" * 100) for _ in range(200)]
        gc.collect()
        gc.disable()
        try:
            before = len(gc.get_objects())
            futures = [producer.send_nowait(message) for message in messages]
            tracked = len(gc.get_objects()) - before
            with anyio.fail_after(10):
                flushed = await producer.flush()
            assert flushed.sent == 200 and fake.batches >= 2  # (the warm-up's, then these)
            assert fake.sends == 0  # (every one of them in a batch)
            assert all(isinstance(f.result().msg_id, str) for f in futures)
            del futures
            left = [o for o in gc.get_objects() if isinstance(o, Batch)]
        finally:
            gc.enable()
        assert tracked <= 1.1 * len(messages)
        assert not left  # (nor does an idle sender task hold them)
        assert producer._group.senders.pending == producer._group.senders.pending_bytes == 0


async def test_each_callback_in_a_batch_is_called_once_with_its_own_future() -> None:
    """Messages with and without a callback in one batch: each callback is called once, with
    the future of its own message, in the order they were admitted."""
    fake = FakeCluster("ok")
    async with _batching(fake) as producer:
        await producer.send(Message(topic="T", body=b"warm"))  # (route and connection)
        calls = Calls()
        futures = [
            producer.send_nowait(Message(topic="T", body=b"%d" % i), callback=callback)
            for i, callback in enumerate([calls if i % 3 else None for i in range(30)])
        ]
        with anyio.fail_after(10):
            assert (await producer.flush()).sent == 30
        await calls.until(20)
        assert fake.batches == 2  # (the warm-up's, then one for the thirty)
        assert calls.futures == [f for i, f in enumerate(futures) if i % 3]
        assert len({f.result().msg_id for f in calls.futures}) == 20
        assert all(calls.done_when_called)


async def test_a_stop_fails_a_written_unanswered_batch_and_calls_back_each_message() -> None:
    fake = FakeCluster("stall")  # (the batch is written, never answered)
    async with _batching(fake, send_timeout=60.0) as producer:
        called: list[Any] = []
        futures = [producer.send_nowait(Message(topic="T", body=b"%d" % i),
                                        callback=called.append) for i in range(10)]  # fmt: skip
        senders = producer._group.senders
        with anyio.fail_after(10):  # (a contract: the stop waits 0.5 s, not the send's 60)
            await fake.received.wait()  # (written: the fake broker has it)
            await producer.stop()
        assert fake.batches == 1
        errors = [f.exception() for f in futures]
        assert all(isinstance(e, SendFailed) and e.outcome_unknown for e in errors)
        assert all(isinstance(e.attempts[-1], ClientClosed) for e in errors)  # type: ignore[union-attr]
        assert called == futures  # once each, in order
        assert senders.pending == senders.pending_bytes == 0 and not senders._batches


@pytest.mark.parametrize("tags", [None, "a"], ids=["plain", "prepared"])
async def test_a_batch_that_cannot_be_queued_refuses_the_message_that_opened_it(
    tags: str | None,
) -> None:
    fake = FakeCluster("ok")
    async with _batching(fake) as producer:
        await producer.send(Message(topic="T", body=b"warm"))  # (route and connection)
        senders = producer._group.senders
        senders.outbox.close()  # (as a stop does, between a check and the queueing)
        called: list[Any] = []
        with pytest.raises(ClientClosed):
            producer.send_nowait(Message(topic="T", body=b"x", tags=tags), callback=called.append)
        assert senders.pending == senders.pending_bytes == 0 and not senders._batches
        assert senders._batcher is not None
        assert not senders._batcher._open  # (no later message joins a batch never sent)
        await anyio.lowlevel.checkpoint()
        assert not called  # (the caller gets the error instead)


@pytest.mark.parametrize("hooked", [False, True])
async def test_sends_past_max_pending_wait_for_room_and_all_are_stored(hooked: bool) -> None:
    # (hooked: ProducerGroup._batched's path, which waits for room itself)
    fake, hook = FakeCluster("ok"), Recording()
    async with _batching(fake, max_pending=2, hooks=[hook] if hooked else []) as producer:
        results = []

        async def send(i: int) -> None:
            results.append(await producer.send(Message(topic="T", body=b"%d" % i)))

        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                for i in range(10):
                    tg.start_soon(send, i)
        assert len({r.msg_id for r in results}) == 10  # (each its own result)
        assert producer._group.senders.pending == 0
    ended = sorted(c.result.msg_id for c in hook.ended if c.result is not None)
    assert ended == (sorted(r.msg_id for r in results) if hooked else [])  # each, its result


async def test_a_message_with_properties_in_a_batch_holds_no_prepared_form() -> None:
    """Whatever path prepared a batched message, its batch holds only its future (and its
    callback): no ``Queued`` nor ``Prepared`` stays alive while it is in flight."""
    fake = FakeCluster("ok")
    async with _batching(fake) as producer:
        await producer.send(Message(topic="T", body=b"warm"))  # (route and connection)
        tagged = [Message(topic="T", body=b"x", tags="a", keys=["k"]) for _ in range(50)]
        futures = [producer.send_nowait(message) for message in tagged]
        (batch,) = producer._group.senders._batches
        assert batch.futures == list[Any](futures) and len(batch.ids) == 50
        gc.collect()  # (what earlier tests left)
        assert not [o for o in gc.get_objects() if isinstance(o, Queued | Prepared)]
        with anyio.fail_after(10):
            assert (await producer.flush()).sent == 50
        assert all(f.result().msg_id for f in futures)
        senders = producer._group.senders
        assert senders.pending == senders.pending_bytes == 0 and not senders._batches


async def test_a_bad_flag_is_refused_before_it_joins_a_batch_and_holds_no_room() -> None:
    fake = FakeCluster("ok")
    async with _batching(fake) as producer:
        await producer.send(Message(topic="T", body=b"warm"))  # (route and connection)
        senders = producer._group.senders
        for flag in (1 << 31, -(1 << 31) - 1):
            for tags in (None, "a"):  # (the plain path and the prepared one)
                with pytest.raises(InvalidMessage, match="32 bits"):
                    producer.send_nowait(Message(topic="T", body=b"x", flag=flag, tags=tags))
        assert senders.pending == senders.pending_bytes == 0
        batcher = senders._batcher
        assert batcher is not None and not batcher._open and batcher.held == 0  # (no record)
        with anyio.fail_after(10):
            results = [await producer.send(Message(topic="T", body=b"%d" % i)) for i in range(3)]
        assert len({r.msg_id for r in results}) == 3  # (no batch holds a stray id)


async def test_two_names_of_one_topic_get_each_its_own_name_in_the_results() -> None:
    """With a namespace, ``orders`` and ``ns%orders`` are sent as one topic; each message's
    result names the topic as its sender did."""
    fake = FakeCluster("ok")
    async with _batching(fake, namespace="ns") as producer:
        await producer.send(Message(topic="orders", body=b"warm"))  # (route and connection)
        futures = [producer.send_nowait(Message(topic=topic, body=b"x"))
                   for topic in ("orders", "ns%orders", "orders")]  # fmt: skip
        with anyio.fail_after(10):
            assert (await producer.flush()).sent == 3
        assert [f.result().queue.topic for f in futures] == ["orders", "ns%orders", "orders"]


class Recording:
    def __init__(self) -> None:
        self.ended: list[SendContext] = []

    def before_send(self, context: SendContext) -> None:
        pass

    def after_send(self, context: SendContext) -> None:
        self.ended.append(context)


async def test_an_auto_batched_send_has_run_its_after_send_when_it_returns() -> None:
    """``send`` with hooks, auto-batched as without: a synchronous send to them, whose
    ``after_send`` (a span's end, a trace record) has run when ``send`` returns."""
    fake, hook = FakeCluster("ok"), Recording()
    async with _batching(fake, hooks=[hook]) as producer:
        for i in range(3):
            result = await producer.send(Message(topic="T", body=b"%d" % i))
            assert len(hook.ended) == i + 1 and hook.ended[-1].result == result
        with pytest.raises(InvalidMessage):
            await producer.send(Message(topic="T", body=b""))
    assert [c.mode for c in hook.ended] == ["sync"] * 4 and fake.batches == 3
    assert isinstance(hook.ended[-1].error, InvalidMessage)
