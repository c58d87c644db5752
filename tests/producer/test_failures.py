"""How sends fail, against a fake broker (faults on demand; the real broker cannot be told
to answer SYSTEM_BUSY or to stall)."""

from __future__ import annotations

import time
from typing import Any

import anyio
import pytest
from structlog.testing import capture_logs

from rocketmq_actors.cluster.options import ClientOptions
from rocketmq_actors.errors import (
    BrokerError,
    ClientClosed,
    InternalError,
    NameServerUnavailable,
    RequestTimeout,
    SendFailed,
)
from rocketmq_actors.producer import Message, Producer, ProducerOptions
from rocketmq_actors.producer.senders import INITIAL_SENDERS, SENDERS
from rocketmq_actors.protocol.codes import RequestCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.testing.fakeserver import FakePeer, FakeServer
from tests.slack import slack

from .fakes import FakeCluster


async def _send(
    answer: str, options: ProducerOptions | None = None
) -> tuple[SendFailed, FakeCluster]:
    fake = FakeCluster(answer)
    async with FakeServer(fake) as server:
        fake.addr = server.addr
        options = options or ProducerOptions()
        async with Producer(namesrv=server.addr, group="G", options=options) as p:
            with pytest.raises(SendFailed) as info:
                await p.send(Message(topic="T", body=b"x"))
    return info.value, fake


async def test_busy_broker_is_retried_then_not_stored() -> None:
    failed, fake = await _send("busy")
    assert fake.sends == 3 and len(failed.attempts) == 3  # 1 + retry_times
    assert all(isinstance(a, BrokerError) for a in failed.attempts)
    assert not failed.outcome_unknown and failed.retriable


async def test_refusal_is_not_retried() -> None:
    failed, fake = await _send("illegal")
    assert fake.sends == 1 and not failed.retriable and not failed.outcome_unknown


async def test_stalled_broker_means_outcome_unknown_within_the_timeout() -> None:
    with anyio.fail_after(5):
        failed, _ = await _send("stall", ProducerOptions(send_timeout=0.5))
    assert failed.outcome_unknown
    assert isinstance(failed.__cause__, RequestTimeout)


async def test_submit_applies_backpressure() -> None:
    fake = FakeCluster("stall")
    async with FakeServer(fake) as server:
        fake.addr = server.addr
        # send_timeout: longer than the look below takes under make test's load (at 0.3 s the
        # first send timed out there before it, and the third was admitted in its place)
        async with Producer(
            namesrv=server.addr, group="G", options=ProducerOptions(max_pending=2, send_timeout=2.0)
        ) as p:
            first = await p.submit(Message(topic="T", body=b"1"))
            second = await p.submit(Message(topic="T", body=b"2"))
            admitted = anyio.Event()

            thirds = []

            async def third() -> None:
                thirds.append(await p.submit(Message(topic="T", body=b"3")))
                admitted.set()

            async with anyio.create_task_group() as tg:
                tg.start_soon(third)
                await anyio.wait_all_tasks_blocked()
                assert not admitted.is_set()  # two in flight: the third waits, no error
                with pytest.raises(SendFailed):
                    await first
                await admitted.wait()
            with pytest.raises(SendFailed):
                await second
            with pytest.raises(SendFailed):
                await thirds[0]


def test_refused_identity_is_access_denied_in_both_dialects() -> None:
    from rocketmq_actors.errors import AccessDenied, BrokerError, broker_error

    v5 = broker_error("b:1", 16, "check signature failed.")
    v4 = broker_error("b:1", 1, "org.apache.rocketmq.acl.common.AclException: No accessKey ...")
    assert isinstance(v5, AccessDenied) and isinstance(v4, AccessDenied)
    assert not v5.retriable and not v4.retriable
    perm = broker_error("b:1", 16, "the broker[broker-a] sending message is forbidden")
    assert type(perm) is BrokerError and perm.retriable  # a permission, not an identity


async def test_stop_resolves_every_pending_future_on_a_silent_broker() -> None:
    """Before: closing left most submit futures unresolved for ever (744 of 1,000)."""
    sends_seen = anyio.Event()

    class Silent(FakeCluster):
        async def __call__(self, peer: FakePeer, cmd: RemotingCommand) -> None:
            if cmd.code == RequestCode.SEND_MESSAGE_V2 and self.sends + 1 >= 256:
                sends_seen.set()  # every sender task holds one
            await super().__call__(peer, cmd)

    fake = Silent("stall")
    async with FakeServer(fake) as server:
        fake.addr = server.addr
        producer = Producer(
            namesrv=server.addr,
            group="G",
            options=ProducerOptions(send_timeout=30.0, max_pending=1000),
            client=ClientOptions(shutdown_timeout=1.0),
        )
        await producer.start()
        senders = producer._group.senders
        assert senders._started == INITIAL_SENDERS  # (an idle producer holds few tasks)
        futures = [await producer.submit(Message(topic="T", body=b"%d" % i)) for i in range(1000)]
        with anyio.fail_after(5):
            await sends_seen.wait()
        assert senders._started == SENDERS  # grown while every sender was busy
        began = time.monotonic()
        with capture_logs() as logs:
            await producer.stop()
        took = time.monotonic() - began
    # within shutdown_timeout: the senders in flight are cancelled at the deadline, not at
    # their send_timeout (30 s); a thousand futures resolved meanwhile (more wake-ups)
    assert took < 1.0 + slack(began, wakeups=10), took
    # a clean stop: the mailbox it closes ends its actor, which is not restarted
    assert [e for e in logs if e["event"] == "supervisor.child.exited"] == []
    assert all(future.done() for future in futures)
    errors = []
    for future in futures:
        with pytest.raises(SendFailed) as info:
            await future
        errors.append(info.value)
    unknown = [e for e in errors if e.outcome_unknown]
    not_sent = [e for e in errors if not e.outcome_unknown]
    assert len(unknown) == 256  # written by the sender tasks, never answered
    assert len(not_sent) == 744  # still queued: definitely not stored
    assert all(isinstance(e.attempts[-1], ClientClosed) for e in errors)


async def test_an_unexpected_error_in_one_send_fails_it_not_the_producer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Before: any non-RocketMQError inside a submit send killed the producer and left
    the other pending futures unresolved."""
    fake = FakeCluster("busy")
    async with FakeServer(fake) as server:
        fake.addr = server.addr
        async with Producer(
            namesrv=server.addr, group="G", options=ProducerOptions(retry_times=0)
        ) as producer:
            real_send = producer._group.loop.send

            async def flaky(prepared: Any, routing: Any, timeout: Any, first: Any = None) -> Any:
                if prepared.body == b"bug":
                    raise ZeroDivisionError("a bug somewhere in a send")
                return await real_send(prepared, routing, timeout, first)

            monkeypatch.setattr(producer._group.loop, "send", flaky)
            bad = await producer.submit(Message(topic="T", body=b"bug"))
            good = await producer.submit(Message(topic="T", body=b"fine"))
            with pytest.raises(SendFailed) as info:
                await bad
            assert isinstance(info.value.attempts[0], InternalError)
            assert isinstance(info.value.attempts[0].__cause__, ZeroDivisionError)
            with pytest.raises(SendFailed) as busy:  # the broker's own answer, still served
                await good
            assert isinstance(busy.value.attempts[0], BrokerError)
            assert producer.running


async def test_no_route_because_every_nameserver_is_gone_fails_once() -> None:
    """All NameServers were asked (and are cooling down): asking again at once cannot help.
    Java's send fails there too ("No route info of this topic"); before, the same failure was
    made three times within about 10 ms."""
    fake = FakeCluster("busy")
    async with FakeServer(fake) as server:
        fake.addr = server.addr
        producer = Producer(
            namesrv=server.addr, group="G", options=ProducerOptions(send_timeout=2.0)
        )
        await producer.start()
    try:  # the NameServer (the fake) is gone; this topic has no cached route
        started = time.monotonic()
        with pytest.raises(SendFailed) as info:
            await producer.send(Message(topic="NEVER_ROUTED", body=b"x"))
        assert len(info.value.attempts) == 1
        assert isinstance(info.value.attempts[0], NameServerUnavailable)
        assert time.monotonic() - started < 1.0 + slack(started)
    finally:
        await producer.stop()
