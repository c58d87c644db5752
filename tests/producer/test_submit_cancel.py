"""A caller's cancellation around ``submit`` affects no other send, against a fake
broker that answers sends only when the test lets it (the real broker cannot be held)."""

from __future__ import annotations

import anyio
import pytest

from rocketmq_actors.errors import ClientClosed
from rocketmq_actors.producer import FlushResult, Message, Producer, ProducerOptions, SendFuture
from rocketmq_actors.producer.sendloop import ROUND_ROBIN
from rocketmq_actors.testing.fakeserver import FakeServer

from .fakes import GatedCluster


def _senders_restarts(producer: Producer) -> int:
    (senders,) = [n for n in producer._group.describe().children if n.name == "senders"]
    return senders.restarts


async def test_cancelling_the_await_of_one_future_fails_no_other_send() -> None:
    """Before: the cancelled future made the sender's set_result raise InvalidStateError,
    which tore down the pool: the other 4 failed with ClientClosed, and flush raised
    CancelledError."""
    fake = GatedCluster()
    fake.routes_open.set()
    async with FakeServer(fake) as server:
        fake.addr = server.addr
        async with Producer(
            namesrv=server.addr, group="G", options=ProducerOptions(send_timeout=10)
        ) as producer:
            futures = [await producer.submit(Message(topic="T", body=b"m%d" % i)) for i in range(5)]
            with anyio.fail_after(5):
                await fake.wait_sends(5)
            with anyio.move_on_after(0):  # the caller gives up on the third one
                await futures[2]
            assert futures[2].cancelled()
            flushed: list[FlushResult] = []
            with anyio.fail_after(5):
                async with anyio.create_task_group() as tg:

                    async def flush() -> None:
                        flushed.append(await producer.flush())

                    tg.start_soon(flush)
                    await anyio.wait_all_tasks_blocked()  # flush took the 5 futures
                    fake.sends_open.set()
            others = [f for i, f in enumerate(futures) if i != 2]
            assert all(f.done() and f.exception() is None for f in others)
            assert flushed == [FlushResult(sent=4, failed=0, pending=0, cancelled=1)]
            assert flushed[0].total == 5
            assert _senders_restarts(producer) == 0
            result = await producer.send(Message(topic="T", body=b"after"))
            assert result.offset_msg_id == "AB"


async def test_cancelled_admission_leaves_no_send_registered() -> None:
    """Three ordered sends race through admission with room for one (max_pending=1) while the
    route lookup waits; the two still admitting are cancelled. Before: the third, cancelled
    while blocked putting into the work queue, stayed registered: flush() never returned and
    a later send to the same key waited for ever behind it."""
    fake = GatedCluster()
    async with FakeServer(fake) as server:
        fake.addr = server.addr
        async with Producer(
            namesrv=server.addr, group="G", options=ProducerOptions(max_pending=1, send_timeout=10)
        ) as producer:
            admitted: list[SendFuture] = []

            async def admit(i: int) -> None:
                message = Message(topic="T", body=b"o%d" % i)
                admitted.append(await producer.submit(message, sharding_key="k"))

            with anyio.fail_after(5):
                async with anyio.create_task_group() as tg:
                    for i in range(3):
                        tg.start_soon(admit, i)
                    await anyio.wait_all_tasks_blocked()  # all three wait for the route
                    fake.routes_open.set()
                    await fake.wait_sends(1)
                    await anyio.wait_all_tasks_blocked()  # the rest admit as far as they can
                    tg.cancel_scope.cancel()
            assert 1 <= len(admitted) <= 2
            fake.sends_open.set()
            with anyio.fail_after(5):
                flushed = await producer.flush()
                later = await producer.submit(Message(topic="T", body=b"z"), sharding_key="k")
                assert (await later).offset_msg_id == "AB"
            assert flushed.pending == 0 and flushed.failed == 0
            assert (
                producer._group.senders.pending == 0 and not producer._group.senders.outstanding()
            )


async def test_admission_after_the_outbox_closed_is_a_typed_error() -> None:
    """Before: a raw anyio.ClosedResourceError escaped submit (the producer stopped while
    an ordered send looked its route up), and the send stayed registered."""
    producer = Producer(namesrv="127.0.0.1:1")  # never started: its senders alone
    senders = producer._group.senders
    prepared = producer._group.prepare(Message(topic="T", body=b"x"))
    senders.fail_unsent()  # what the producer's stop does once the sender tasks are gone
    with pytest.raises(ClientClosed, match="stopped before the send was admitted"):
        await senders.admit(prepared, ROUND_ROBIN, None, lambda: None)
    assert senders.pending == senders.pending_bytes == 0 and not senders.outstanding()
