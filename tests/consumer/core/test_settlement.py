"""Per-message settlement and the delivered message type, without a broker."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any, cast

import anyio
import attrs
import pytest

from rocketmq_actors.consumer.core.dispatch import Dispatcher
from rocketmq_actors.consumer.core.message import (
    ReceivedMessage,
    RecordDeserializationError,
    deserialize,
    deserialize_record,
)
from rocketmq_actors.consumer.core.queues import QueueTable
from rocketmq_actors.consumer.core.settlement import (
    DELAY_LEVELS,
    DelayLevel,
    MessageAlreadySettled,
    Outcome,
    Settlement,
    SettlementNotSupported,
    delay_level,
)
from rocketmq_actors.consumer.pull.fetcher import Fetcher, deserialize_taken
from rocketmq_actors.errors import ConfigError
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.records import MessageExt, decode_messages, decode_records
from rocketmq_actors.testing.stored import encode_stored

QUEUE = MessageQueue("T", "broker-a", 0)


def _received(body: bytes = b"{}", offset: int = 0) -> ReceivedMessage[Any]:
    (message,) = decode_records(
        encode_stored(topic="T", body=body, queue_offset=offset), ReceivedMessage
    )
    return message


def _delivered() -> ReceivedMessage[Any]:
    message = _received()
    message.settle_with(Settlement())
    return message


def test_decoded_records_are_message_ext_with_their_fields() -> None:
    stored = encode_stored(topic="T", body=b"x", queue_offset=7, compress=True)
    message = _received()
    (plain,) = decode_messages(stored)
    (received,) = decode_records(stored, ReceivedMessage)
    assert isinstance(received, MessageExt) and isinstance(message, ReceivedMessage)
    assert type(plain) is MessageExt
    fields = [f.name for f in attrs.fields(MessageExt)]
    assert [getattr(received, f) for f in fields] == [getattr(plain, f) for f in fields]
    assert received.value == received.body == b"x"  # no deserializer: the body


@pytest.mark.parametrize(
    ("delay", "level"),
    [(DelayLevel(1), 1), (DelayLevel(18), 18), (0.0, 1), (1.0, 1), (1.5, 2), (5.0, 2),
     (5, 2), (61.0, 6), (60, 5), (timedelta(minutes=2), 6), (timedelta(hours=2), 18),
     (7200.0, 18), (0, 1)],
)  # fmt: skip
def test_a_delay_is_a_level_or_the_smallest_level_at_least_as_long(
    delay: int | float | timedelta, level: int
) -> None:
    assert delay_level(delay) == level
    if not isinstance(delay, DelayLevel):  # a duration: the smallest level at least as long
        seconds = delay.total_seconds() if isinstance(delay, timedelta) else delay
        assert DELAY_LEVELS[level - 1] >= seconds
        assert level == 1 or DELAY_LEVELS[level - 2] < seconds


@pytest.mark.parametrize(
    "delay",
    [DelayLevel(0), DelayLevel(19), -1, 7201, 7200.5, float("nan"), -0.1, True, "5"],
)
def test_a_delay_out_of_range_is_refused_naming_it(delay: object) -> None:
    with pytest.raises(ConfigError, match="delay"):
        delay_level(delay)  # type: ignore[arg-type]
    message = _delivered()
    with pytest.raises(ConfigError):
        message.nack(delay)  # type: ignore[arg-type]
    assert not message.settled  # a refused nack settles nothing


def test_settling_twice_or_after_the_delivery_raises() -> None:
    message = _delivered()
    message.ack()
    with pytest.raises(MessageAlreadySettled):
        message.ack()
    with pytest.raises(MessageAlreadySettled):
        message.nack(DelayLevel(1))
    assert message.settlement is not None and message.settlement.outcome is Outcome.ACK
    late = _delivered()
    assert late.settlement is not None
    late.settlement.close()  # the handler returned
    with pytest.raises(MessageAlreadySettled):
        late.nack()


def test_a_pull_consumers_record_is_not_settled() -> None:
    message = _received()
    with pytest.raises(SettlementNotSupported, match="commit"):
        message.ack()
    with pytest.raises(SettlementNotSupported):
        message.nack()


async def test_a_pull_consumers_record_cannot_be_processed() -> None:
    with pytest.raises(SettlementNotSupported):
        async with _received().process():
            pass


async def test_process_acks_on_exit_and_nacks_on_an_exception_which_goes_on() -> None:
    ok = _delivered()
    async with ok.process():
        pass
    assert ok.settlement is not None and ok.settlement.outcome is Outcome.ACK
    failed = _delivered()
    with pytest.raises(KeyError):
        async with failed.process(delay=2.0):
            raise KeyError("x")
    assert failed.settlement is not None and failed.settlement.outcome is Outcome.NACK
    assert failed.settlement.level(0) == 2
    dead = _delivered()
    with pytest.raises(KeyError):
        async with dead.process(requeue=False):
            raise KeyError("x")
    assert dead.settlement is not None and dead.settlement.outcome is Outcome.DEAD


async def test_process_with_a_message_settled_inside() -> None:
    inside = _delivered()
    with pytest.raises(MessageAlreadySettled):
        async with inside.process():
            inside.nack(DelayLevel(1))
    kept = _delivered()
    async with kept.process(ignore_processed=True):
        kept.nack(DelayLevel(1))
    assert kept.settlement is not None and kept.settlement.outcome is Outcome.NACK
    raised = _delivered()
    with pytest.raises(ValueError, match="mine"):  # never masked by the settlement
        async with raised.process():
            raised.ack()
            raise ValueError("mine")
    assert raised.settlement is not None and raised.settlement.outcome is Outcome.ACK


def test_orderly_suspend_is_the_delay_within_javas_bounds() -> None:
    def suspend(delay: DelayLevel | int | float | None) -> float:
        settlement = Settlement()
        settlement.nack(delay)
        return settlement.suspend(1.0)

    assert suspend(None) == 1.0
    assert suspend(DelayLevel(2)) == 5.0  # level 2: 5 s
    assert suspend(2) == 2.0  # an int is seconds
    assert suspend(0.5) == 0.5
    assert suspend(0.0) == 0.01
    assert suspend(DelayLevel(5)) == 30.0  # level 5 is 1 min: 30 s at most
    assert suspend(45) == 30.0


def test_push_deserializer_sets_values_and_marks_what_it_rejects() -> None:
    good, bad = _received(b'{"a": 1}'), _received(b"not json", offset=1)
    deserialize([good, bad], json.loads, "G")
    assert good.value == {"a": 1} and good.decode_error is None
    assert bad.value == b"not json"
    assert bad.decode_error is not None and "value_deserializer" in bad.decode_error


def test_pull_deserializer_raises_naming_queue_and_offset() -> None:
    bad = _received(b"not json", offset=4)
    with pytest.raises(RecordDeserializationError) as caught:
        deserialize_record(bad, json.loads, QUEUE)
    assert (caught.value.queue, caught.value.offset) == (QUEUE, 4)
    assert isinstance(caught.value.__cause__, json.JSONDecodeError)


async def test_dispatcher_explicit_settlement_wins() -> None:
    async def handler(message: ReceivedMessage[Any]) -> None:
        if message.body == b"ack-then-raise":
            message.ack()
            raise RuntimeError("after the ack")
        if message.body == b"nack-then-return":
            message.nack(DelayLevel(3))

    dispatcher = Dispatcher("G", handler=handler, batch_handler=None, consume_timeout=None,
                            tracing=None, fail=lambda exc: None)  # fmt: skip
    acked, nacked = _received(b"ack-then-raise"), _received(b"nack-then-return")
    assert await dispatcher.invoke([acked]) is True
    assert await dispatcher.invoke([nacked]) is False
    assert nacked.settlement is not None and nacked.settlement.level(0) == 3
    assert (dispatcher.consumed, dispatcher.failed) == (1, 1)
    with pytest.raises(MessageAlreadySettled):  # its delivery has ended
        acked.nack()


async def test_async_for_ends_a_delivery_on_ack_before_the_next() -> None:
    dispatcher = Dispatcher("G", handler=None, batch_handler=None, consume_timeout=None,
                            tracing=None, fail=lambda exc: None)  # fmt: skip
    deliveries = dispatcher.deliveries
    assert deliveries is not None
    message = _received()
    outcome: list[bool | None] = []
    ended = anyio.Event()

    async def worker() -> None:
        outcome.append(await dispatcher.invoke([message]))
        ended.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(worker)
        got = await deliveries.next()
        got.nack(DelayLevel(1))  # the worker goes on at once, before the loop asks for the next
        with anyio.fail_after(5):
            await ended.wait()
    assert outcome == [False]
    deliveries.dispose()


class _Fetchers:
    """The one method of a QueueTable that deserialize_taken uses."""

    def __init__(self, fetchers: dict[MessageQueue, Fetcher]) -> None:
        self._fetchers = fetchers

    def lookup(self, queue: MessageQueue) -> Fetcher | None:
        return self._fetchers.get(queue)


def test_pull_records_before_a_rejected_one_are_returned_the_rest_put_back() -> None:
    other = MessageQueue("T", "broker-a", 1)
    fetchers = {q: Fetcher(None, q, 0, paused=False) for q in (QUEUE, other)}  # type: ignore[arg-type]
    table = cast("QueueTable[Fetcher]", _Fetchers(fetchers))
    first = [_received(b"1", 0), _received(b"bad", 1), _received(b"3", 2)]
    second = [_received(b"4", 0)]
    taken: dict[MessageQueue, list[MessageExt]] = {QUEUE: list(first), other: list(second)}
    for queue, records in taken.items():  # as take_records leaves them
        fetchers[queue].position = records[-1].queue_offset + 1
    got = deserialize_taken(table, taken, json.loads, lambda q: q)
    assert got == {QUEUE: first[:1]} and first[0].value == 1
    assert list(fetchers[QUEUE].records) == first[1:] and fetchers[QUEUE].position == 1
    assert list(fetchers[other].records) == second and fetchers[other].position == 0
    with pytest.raises(RecordDeserializationError) as caught:  # now it comes first
        deserialize_taken(table, {QUEUE: list[MessageExt](first[1:])}, json.loads, lambda q: q)
    assert caught.value.offset == 1 and fetchers[QUEUE].position == 1
