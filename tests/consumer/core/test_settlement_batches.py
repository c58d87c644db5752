"""Settling the messages of a batch one by one, in both consume services, without a broker."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from rocketmq_actors.consumer.core.dispatch import Dispatcher, settled
from rocketmq_actors.consumer.core.message import ReceivedMessage
from rocketmq_actors.consumer.core.process_queue import ProcessQueue
from rocketmq_actors.consumer.core.sendback import DLQ_NOW
from rocketmq_actors.consumer.core.settlement import MessageAlreadySettled, Outcome, Settlement
from rocketmq_actors.consumer.push.concurrent import ConcurrentConsumeService, _Share
from rocketmq_actors.consumer.push.orderly import OrderlyConsumeService
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.records import MessageExt, decode_records
from rocketmq_actors.testing.stored import encode_stored

QUEUE = MessageQueue("T", "broker-a", 0)
Batch = list[ReceivedMessage[Any]]


def _batch(*bodies: bytes) -> Batch:
    return [
        decode_records(encode_stored(topic="T", body=body, queue_offset=i), ReceivedMessage)[0]
        for i, body in enumerate(bodies)
    ]


def _dispatcher(batch_handler: Any) -> Dispatcher:
    return Dispatcher("G", handler=None, batch_handler=batch_handler, consume_timeout=None,
                      tracing=None, fail=lambda exc: None)  # fmt: skip


class _Offsets:
    def __init__(self) -> None:
        self.updates: list[int] = []

    def update(self, queue: MessageQueue, offset: int) -> None:
        self.updates.append(offset)


class _Owner:
    """What the consume services ask of their consumer: send-backs are recorded."""

    group = "G"
    retry_delay_level = 0
    clustering = True
    locking = False
    stopping = False

    def __init__(self) -> None:
        self.offsets = _Offsets()
        self.sent: list[tuple[bytes, int]] = []

    async def send_back(self, message: MessageExt, delay_level: int) -> bool:
        self.sent.append((message.body, delay_level))
        return True

    def flow_changed(self) -> None:
        pass


def _queue(batch: Batch) -> ProcessQueue:
    pq = ProcessQueue(QUEUE, 0)
    pq.put(list[MessageExt](batch))
    return pq


async def _concurrently(handler: Any, batch: Batch) -> tuple[_Owner, Dispatcher]:
    owner, dispatcher = _Owner(), _dispatcher(handler)
    service = ConcurrentConsumeService(owner, dispatcher, concurrency=1,  # type: ignore[arg-type]
                                       consume_batch_size=len(batch), consume_timeout=None,
                                       local_retry_delay=1.0)  # fmt: skip
    pq = _queue(batch)
    messages = list[MessageExt](batch)
    outcome = await dispatcher.invoke(messages, timed=False)
    await service._settle(_Share(pq, messages, len(messages)), messages, outcome)
    return owner, dispatcher


async def test_a_batch_handler_that_nacks_one_and_returns_consumes_the_others() -> None:
    async def handle(messages: Batch) -> None:
        messages[0].nack()

    batch = _batch(b"m0", b"m1", b"m2")
    owner, dispatcher = await _concurrently(handle, batch)
    assert [settled(m) for m in batch] == [Outcome.NACK, Outcome.ACK, Outcome.ACK]
    assert owner.sent == [(b"m0", 0)]  # only the nacked one goes back
    assert owner.offsets.updates == [3]
    assert (dispatcher.consumed, dispatcher.failed) == (2, 1)


async def test_a_batch_handler_that_acks_one_and_raises_fails_only_the_others() -> None:
    async def handle(messages: Batch) -> None:
        messages[1].ack()
        raise RuntimeError("after one ack")

    batch = _batch(b"m0", b"m1", b"m2")
    owner, dispatcher = await _concurrently(handle, batch)
    assert [settled(m) for m in batch] == [Outcome.NACK, Outcome.ACK, Outcome.NACK]
    assert owner.sent == [(b"m0", 0), (b"m2", 0)]  # the acked one is committed, not sent
    assert owner.offsets.updates == [3]
    assert (dispatcher.consumed, dispatcher.failed) == (1, 2)


async def test_an_explicit_nack_keeps_its_delay_and_dead_goes_to_the_dlq() -> None:
    async def handle(messages: Batch) -> None:
        messages[0].nack(delay=10)
        messages[2].nack(requeue=False)

    batch = _batch(b"m0", b"m1", b"m2")
    owner, dispatcher = await _concurrently(handle, batch)
    assert owner.sent == [(b"m0", 3), (b"m2", DLQ_NOW)]
    assert (dispatcher.consumed, dispatcher.failed) == (1, 2)


async def _orderly(rounds: list[Any], batch: Batch) -> tuple[_Owner, list[list[bytes]]]:
    """Consume ``batch`` in order, round ``i`` settled by ``rounds[i]``; the queue is dropped
    after the last round."""
    owner, pq = _Owner(), _queue(batch)
    delivered: list[list[bytes]] = []

    async def handle(messages: Batch) -> None:
        delivered.append([m.body for m in messages])
        rounds[len(delivered) - 1](messages)
        if len(delivered) == len(rounds):
            pq.dropped = True  # ends the queue's loop once this round is settled

    service = OrderlyConsumeService(owner, _dispatcher(handle), concurrency=1,  # type: ignore[arg-type]
                                    consume_batch_size=len(batch), suspend_delay=0.01,
                                    max_reconsume_times=100, lock_interval=20,
                                    rebalance_lock=anyio.Lock())  # fmt: skip
    with anyio.fail_after(5):
        await service.consume(pq)
    return owner, delivered


async def test_orderly_commits_the_head_before_the_first_nack_and_redelivers_the_rest() -> None:
    def first(messages: Batch) -> None:
        messages[1].nack(delay=0.0)  # m0 unsettled: consumed with the handler's return

    def second(messages: Batch) -> None:
        pass

    owner, delivered = await _orderly([first, second], _batch(b"m0", b"m1", b"m2"))
    assert delivered == [[b"m0", b"m1", b"m2"], [b"m1", b"m2"]]
    assert owner.offsets.updates == [1, 3]
    assert owner.sent == []


async def test_orderly_dead_letters_a_message_once_when_an_earlier_one_suspends() -> None:
    def first(messages: Batch) -> None:
        messages[0].ack()
        messages[1].nack(delay=0.0)
        messages[2].nack(requeue=False)  # after the suspended one: comes again, settled then

    def second(messages: Batch) -> None:
        messages[1].nack(requeue=False)

    owner, delivered = await _orderly([first, second], _batch(b"m0", b"m1", b"m2"))
    assert delivered == [[b"m0", b"m1", b"m2"], [b"m1", b"m2"]]
    assert owner.sent == [(b"m2", DLQ_NOW)]  # once
    assert owner.offsets.updates == [1, 3]


async def test_a_process_block_ended_by_a_closed_delivery_keeps_the_users_exception() -> None:
    (message,) = _batch(b"m")
    message.settle_with(settlement := Settlement())
    with pytest.raises(ValueError, match="mine"):
        async with message.process():
            settlement.close()  # the consumer stops (or consume_timeout passes) meanwhile
            raise ValueError("mine")
    assert settlement.outcome is None
    async with message.process():  # a normal exit after the end settles nothing
        settlement.close()
    assert settlement.outcome is None
    with pytest.raises(MessageAlreadySettled, match="consumer is stopping"):
        message.ack()


async def test_orderly_hands_an_undecodable_message_to_the_dlq_alone() -> None:
    batch = _batch(b"m0", b"bad", b"m2")
    batch[1].decode_error = "value_deserializer: no"
    owner, delivered = await _orderly([lambda messages: None] * 2, batch)
    assert delivered == [[b"m0"], [b"m2"]]
    assert owner.sent == [(b"bad", DLQ_NOW)]
    assert owner.offsets.updates == [1, 2, 3]


async def test_async_for_stopped_inside_a_process_block_keeps_the_users_exception() -> None:
    dispatcher = _dispatcher(None)
    deliveries = dispatcher.deliveries
    assert deliveries is not None
    (message,) = _batch(b"m")
    outcome: list[bool | None] = []
    ended = anyio.Event()

    async def worker() -> None:
        outcome.append(await dispatcher.invoke([message]))
        ended.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(worker)
        got = await deliveries.next()
        with pytest.raises(ValueError, match="mine"):
            async with got.process():
                deliveries.close()  # the consumer stops while the block runs
                with anyio.fail_after(5):
                    await ended.wait()  # the delivery has ended: its settlement is closed
                raise ValueError("mine")
    assert outcome == [None]  # left unconsumed: delivered again
    assert not got.settled
    deliveries.dispose()


@pytest.mark.parametrize("orderly", [False, True])
async def test_a_stop_in_async_for_commits_what_was_acked_and_keeps_the_rest(
    orderly: bool,
) -> None:
    owner, dispatcher = _Owner(), _dispatcher(None)
    deliveries = dispatcher.deliveries
    assert deliveries is not None
    batch = _batch(b"m0", b"m1")
    pq = _queue(batch)
    concurrent = ConcurrentConsumeService(owner, dispatcher, concurrency=1,  # type: ignore[arg-type]
                                          consume_batch_size=2, consume_timeout=None,
                                          local_retry_delay=1.0)  # fmt: skip
    service = OrderlyConsumeService(owner, dispatcher, concurrency=1,  # type: ignore[arg-type]
                                    consume_batch_size=2, suspend_delay=0.01,
                                    max_reconsume_times=100, lock_interval=20,
                                    rebalance_lock=anyio.Lock())  # fmt: skip

    async def worker() -> None:
        if orderly:
            await service.consume(pq)
        else:
            messages = list[MessageExt](batch)
            outcome = await dispatcher.invoke(messages)
            await concurrent._settle(_Share(pq, messages, 2), messages, outcome)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(worker)
            (await deliveries.next()).ack()
            await deliveries.next()  # m1: the consumer stops while the loop is on it
            owner.stopping = True
            deliveries.close()
    assert owner.offsets.updates == [1]  # m0 committed; m1 delivered again
    assert (pq.count, pq.lowest) == (1, 1)
    assert (dispatcher.consumed, dispatcher.failed) == (1, 0)
    deliveries.dispose()


async def test_every_undecodable_message_of_a_call_is_logged_and_the_call_fails() -> None:
    from structlog.testing import capture_logs

    batch = _batch(b"a", b"b", b"c")
    batch[0].decode_error, batch[2].decode_error = "bad-first", "bad-last"
    handled: list[Batch] = []

    async def handler(messages: Batch) -> None:
        handled.append(messages)

    dispatcher = _dispatcher(handler)
    with capture_logs() as logs:
        outcome = await dispatcher.invoke(list[MessageExt](batch), timed=False)
    assert outcome is False
    assert handled == []  # (a call with an undecodable message never reaches the handler)
    assert (dispatcher.failed, dispatcher.consumed, dispatcher.in_flight) == (3, 0, 0)
    undecodable = [e for e in logs if e["event"] == "consumer.undecodable"]
    assert [(e["reason"], e["queue_offset"]) for e in undecodable] == [
        ("bad-first", 0), ("bad-last", 2),
    ]  # fmt: skip


async def test_every_message_of_a_call_is_closed_when_its_handler_returns() -> None:
    kept: Batch = []

    async def handler(messages: Batch) -> None:
        kept.extend(messages)

    dispatcher = _dispatcher(handler)
    assert await dispatcher.invoke(list[MessageExt](_batch(b"a", b"b", b"c")), timed=False)
    assert [settled(m) for m in kept] == [Outcome.ACK] * 3
    # the delivery has ended for each, not for the first alone
    assert [m.settlement is not None and m.settlement.closed for m in kept] == [True] * 3
