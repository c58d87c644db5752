"""The first attempt of ``submit`` and ``send_nowait``, started without a task
(producer/attempt.py), against a fake broker whose answers the test scripts (the real broker
cannot be told to answer SYSTEM_BUSY or to stay silent)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from rocketmq_actors.cluster.options import ClientOptions
from rocketmq_actors.errors import (
    BrokerError,
    ClientClosed,
    ConfigError,
    InternalError,
    RequestTimeout,
    SendFailed,
)
from rocketmq_actors.producer import Message, Producer, ProducerOptions, SendStatus
from rocketmq_actors.protocol.codes import RequestCode, ResponseCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.protocol.errors import ProtocolError
from rocketmq_actors.testing.fakeserver import FakePeer, FakeServer, route_body
from tests.slack import slack

from .fakes import on_shared_instance


class Scripted:
    """NameServer (any topic: one broker, itself, 2 queues) and that broker: each send is
    answered with the next code of ``answers`` (SUCCESS once they run out); None: silence."""

    def __init__(self, *answers: int | None) -> None:
        self.addr = ""
        self.answers = list(answers)
        self.sends = 0

    async def __call__(self, peer: FakePeer, cmd: RemotingCommand) -> None:
        if cmd.code == RequestCode.GET_ROUTEINFO_BY_TOPIC:
            await peer.reply(cmd, body=route_body(("fake", self.addr)))
        elif cmd.code == RequestCode.SEND_MESSAGE_V2:
            self.sends += 1
            code = self.answers.pop(0) if self.answers else ResponseCode.SUCCESS
            if code is None:
                await anyio.sleep_forever()
                return
            queue_id = cmd.ext_fields.get("e", "0")
            ext = {"msgId": f"AB{self.sends}", "queueId": queue_id, "queueOffset": "7"}
            await peer.reply(cmd, code, remark="scripted", ext_fields=ext)
        else:
            await peer.reply(cmd)


class LoopSends:
    """Counts the sends that went through ``SendLoop.send`` (a sender task), and with what."""

    def __init__(self, producer: Producer, monkeypatch: pytest.MonkeyPatch) -> None:
        self.firsts: list[Any] = []
        real = producer._group.loop.send

        async def spy(prepared: Any, routing: Any, timeout: Any, first: Any = None) -> Any:
            self.firsts.append(first)
            return await real(prepared, routing, timeout, first)

        monkeypatch.setattr(producer._group.loop, "send", spy)


async def _known_route(producer: Producer) -> None:
    """One sync send: the route of T is cached and its connection open."""
    await producer.send(Message(topic="T", body=b"warm"))


@asynccontextmanager
async def _ready(fake: Scripted) -> AsyncIterator[Producer]:
    """A producer against ``fake``, the route of T known (:func:`_known_route`)."""
    async with FakeServer(fake) as server:
        fake.addr = server.addr
        async with Producer(namesrv=server.addr, group="G") as producer:
            await _known_route(producer)
            yield producer


async def test_submit_on_a_known_route_needs_no_sender_task(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = Scripted()
    async with _ready(fake) as producer:
        spy = LoopSends(producer, monkeypatch)
        futures = [await producer.submit(Message(topic="T", body=b"%d" % i)) for i in range(50)]
        results = [await future for future in futures]
        assert producer._group.senders.pending == 0
        assert producer._group.loop.in_flight == 0
        conn = producer.instance.pool.registry.lookup(fake.addr)
        assert conn is not None
        stats = conn.statistics()  # every slot and its bytes given back, once
        assert (stats["pending"], stats["in_flight_bytes"]) == (0, 0)
    assert spy.firsts == []  # not one went through a sender task
    assert [r.status for r in results] == [SendStatus.SEND_OK] * 50
    assert {r.queue.queue_id for r in results} == {0, 1}  # round robin over both queues
    assert all(r.queue.topic == "T" and r.queue_offset == 7 for r in results)
    assert len({r.msg_id for r in results}) == 50
    assert fake.sends == 51


async def test_a_busy_first_attempt_is_retried_by_a_sender_task(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = Scripted(ResponseCode.SUCCESS, ResponseCode.SYSTEM_BUSY)
    async with _ready(fake) as producer:
        spy = LoopSends(producer, monkeypatch)
        result = await (await producer.submit(Message(topic="T", body=b"x")))
    assert result.status is SendStatus.SEND_OK
    assert fake.sends == 3  # the warm-up, the busy first attempt, its retry
    (first,) = spy.firsts  # the retry went on from the first attempt's answer
    assert first is not None and first.outcome.code == ResponseCode.SYSTEM_BUSY


async def test_a_refused_first_attempt_fails_once_with_the_brokers_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = Scripted(ResponseCode.SUCCESS, ResponseCode.MESSAGE_ILLEGAL)
    async with _ready(fake) as producer:
        spy = LoopSends(producer, monkeypatch)
        future = await producer.submit(Message(topic="T", body=b"x"))
        with pytest.raises(SendFailed) as info:
            await future
    (first,) = spy.firsts  # the send loop handled the first attempt's answer
    assert first is not None and first.outcome.code == ResponseCode.MESSAGE_ILLEGAL
    assert fake.sends == 2  # not retried: the refusal is for good
    (attempt,) = info.value.attempts
    assert isinstance(attempt, BrokerError) and attempt.code == ResponseCode.MESSAGE_ILLEGAL
    assert not info.value.outcome_unknown


async def test_a_bug_in_the_first_attempt_fails_that_send_not_the_producer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = Scripted()
    async with _ready(fake) as producer:
        spy = LoopSends(producer, monkeypatch)
        real = producer._group.loop.result_of

        def broken(prepared: Any, *args: Any, **kwargs: Any) -> Any:
            if prepared.body == b"bug":
                raise ZeroDivisionError("a bug in a send")
            return real(prepared, *args, **kwargs)

        monkeypatch.setattr(producer._group.loop, "result_of", broken)
        bad = await producer.submit(Message(topic="T", body=b"bug"))
        good = await producer.submit(Message(topic="T", body=b"fine"))
        with pytest.raises(SendFailed) as info:
            await bad
        assert (await good).status is SendStatus.SEND_OK
        assert producer.running
        assert producer._group.senders.pending == 0
    assert spy.firsts == []  # both ended on the first attempt's own path
    (attempt,) = info.value.attempts
    assert isinstance(attempt, InternalError)
    assert isinstance(attempt.__cause__, ZeroDivisionError)


async def test_a_stop_resolves_first_attempts_a_silent_broker_never_answers() -> None:
    fake = Scripted(ResponseCode.SUCCESS, *[None] * 20)
    async with FakeServer(fake) as server:
        fake.addr = server.addr
        producer = Producer(
            namesrv=server.addr,
            group="G",
            options=ProducerOptions(send_timeout=30.0),
            client=ClientOptions(shutdown_timeout=1.0),
        )
        await producer.start()
        await _known_route(producer)
        futures = [await producer.submit(Message(topic="T", body=b"x")) for _ in range(20)]
        assert producer._group.loop.in_flight == 20  # all started, none in a sender task
        began = time.monotonic()
        await producer.stop()
        took = time.monotonic() - began
    # at the shutdown deadline, not at send_timeout
    assert took < 1.0 + slack(began, wakeups=10), took
    assert all(future.done() for future in futures)
    for future in futures:
        with pytest.raises(SendFailed) as info:
            await future
        assert info.value.outcome_unknown  # written, never answered
        assert isinstance(info.value.attempts[-1], ClientClosed)


@pytest.mark.parametrize("timeout", [-1.0, 0.0, float("nan"), "3"])
async def test_a_bad_timeout_is_refused_before_admission(timeout: object) -> None:
    fake = Scripted()
    async with _ready(fake) as producer:
        with pytest.raises(ConfigError, match="timeout"):
            await producer.submit(Message(topic="T", body=b"x"), timeout=timeout)  # type: ignore[arg-type]
        assert producer._group.senders.pending == 0
    assert fake.sends == 1  # the warm-up only


async def test_a_stop_on_a_shared_instance_resolves_first_attempts_at_once() -> None:
    """The instance's connection stays open (another client may use it), so no connection
    loss ends the first attempts: the stop itself fails their futures (outcome unknown)."""
    fake = Scripted(ResponseCode.SUCCESS, *[None] * 5)
    async with on_shared_instance(fake) as producer:
        await _known_route(producer)
        futures = [await producer.submit(Message(topic="T", body=b"x")) for _ in range(5)]
        with anyio.fail_after(5):
            await producer.stop()
        assert all(future.done() for future in futures)
        for future in futures:
            with pytest.raises(SendFailed) as info:
                await future
            assert info.value.outcome_unknown
            assert isinstance(info.value.attempts[-1], ClientClosed)
        assert producer.instance.running  # (the shared instance is not the producer's to stop)


async def test_a_silent_first_attempt_is_retried_within_the_sends_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = Scripted(ResponseCode.SUCCESS, None)  # the first attempt is never answered
    stale: list[str] = []
    async with FakeServer(fake) as server:
        fake.addr = server.addr
        async with Producer(
            namesrv=server.addr, group="G", options=ProducerOptions(attempt_timeout=0.3)
        ) as producer:
            await _known_route(producer)
            monkeypatch.setattr(producer.instance.routes, "mark_stale", stale.append)
            real, seen = producer._group.loop.send, []

            async def spy(prepared: Any, routing: Any, timeout: Any, first: Any = None) -> Any:
                seen.append((first, list(stale)))
                return await real(prepared, routing, timeout, first)

            monkeypatch.setattr(producer._group.loop, "send", spy)
            result = await (await producer.submit(Message(topic="T", body=b"x")))
    assert result.status is SendStatus.SEND_OK
    assert fake.sends == 3  # the warm-up, the silent first attempt, its retry
    ((first, stale_then),) = seen
    assert isinstance(first.outcome, RequestTimeout)
    # recorded as the attempt timed out, before a sender took the retry, and not again there
    assert stale_then == stale == ["T"]


async def test_a_frame_that_cannot_be_built_fails_its_send_and_frees_its_room(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = Scripted()
    async with _ready(fake) as producer:
        real = producer._group.loop.encoder

        class Encoder:
            def encode(self, opaque: int, topic: str, queue_id: int, body: Any, *args: Any,
                       **kwargs: Any) -> bytes:  # fmt: skip
                if body == b"bad":
                    raise ProtocolError("frame-too-large", "scripted")
                return real.encode(opaque, topic, queue_id, body, *args, **kwargs)

        monkeypatch.setattr(producer._group.loop, "encoder", Encoder())
        bad = await producer.submit(Message(topic="T", body=b"bad"))
        with pytest.raises(SendFailed):
            await bad
        with anyio.fail_after(5):
            flushed = await producer.flush()
        senders = producer._group.senders
        assert (flushed.failed, senders.pending, senders.pending_bytes) == (0, 0, 0)
        assert (await (await producer.submit(Message(topic="T", body=b"ok")))).msg_id
    assert fake.sends == 2  # the warm-up and the good one: the bad frame was never written


async def test_a_stop_says_a_timed_out_first_attempt_may_be_stored(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """First attempts that timed out wait in the senders' queue for a task (one here, kept
    busy): a stop fails them with an unknown outcome, since the broker may have them."""
    monkeypatch.setattr("rocketmq_actors.producer.senders.SENDERS", 1)
    fake = Scripted(ResponseCode.SUCCESS, *[None] * 4)
    async with FakeServer(fake) as server:
        fake.addr = server.addr
        producer = Producer(
            namesrv=server.addr,
            group="G",
            options=ProducerOptions(attempt_timeout=0.2, max_pending=4),
            client=ClientOptions(shutdown_timeout=0.5),
        )
        await producer.start()
        await _known_route(producer)
        busy = anyio.Event()

        async def stuck(*args: Any) -> Any:
            busy.set()
            await anyio.sleep_forever()

        monkeypatch.setattr(producer._group.loop, "send", stuck)
        outbox, offered = producer._group.senders.outbox, anyio.Event()
        offer = outbox.offer

        def counted(item: Any) -> bool:
            placed = offer(item)
            if len(outbox) == 3:
                offered.set()
            return placed

        monkeypatch.setattr(outbox, "offer", counted)
        futures = [await producer.submit(Message(topic="T", body=b"x")) for _ in range(4)]
        with anyio.fail_after(5):
            await busy.wait()  # one timed out and is held by the only sender ...
            await offered.wait()  # ... and the other three wait in the queue
            await producer.stop()
    errors = []
    for future in futures:
        with pytest.raises(SendFailed) as info:
            await future
        errors.append(info.value)
    assert [e.outcome_unknown for e in errors] == [True] * 4


def test_a_queue_item_sets_every_field_of_its_attempt_but_what_start_first_sets() -> None:
    """The senders' queue item is its first attempt and sets the attempt's fields itself (no
    __init__ call a message): a field added to the attempt must be set there too."""
    from types import SimpleNamespace

    from rocketmq_actors.producer.prepare import Prepared
    from rocketmq_actors.producer.queued import Queued
    from rocketmq_actors.producer.sendloop import ROUND_ROBIN

    senders: Any = SimpleNamespace(loop=SimpleNamespace(encoder=object()))
    prepared = Prepared("t", "t", b"x", "", "id")
    future: Any = None
    item = Queued(senders, future, prepared, ROUND_ROBIN, None, None, None, 1)
    slots = {name for cls in type(item).__mro__ for name in getattr(cls, "__slots__", ())}
    unset = {name for name in slots if not hasattr(item, name)}
    assert unset == {"route", "queue", "addr", "conn", "started", "deadline"}
    assert item.outcome is None and not item.first and item.senders is senders
