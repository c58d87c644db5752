"""The POP acker: batches per (topic, broker), falls back to one ACK_MESSAGE each where
BATCH_ACK_MESSAGE is unknown, keeps what a network failure left for the next flush while the
handles are valid."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from rocketmq_actors.consumer.pop import calls as pop_calls
from rocketmq_actors.consumer.pop.acks import Acker
from rocketmq_actors.errors import BrokerError, RequestTimeout
from rocketmq_actors.protocol.codes import ResponseCode
from rocketmq_actors.protocol.pop import ExtraInfo

NOW_MS = 1_000_000


def handle(offset: int, broker: str = "a", pop_time: int = NOW_MS) -> ExtraInfo:
    return ExtraInfo(ck_queue_offset=0, pop_time=pop_time, invisible_time=60_000, revive_qid=1,
                     retry="0", broker_name=broker, queue_id=0, queue_offset=offset)  # fmt: skip


class Broker:
    def __init__(self, *, batch: str = "ok") -> None:
        self.batch = batch  # "ok", "unsupported", "down"
        self.batches: list[list[int]] = []
        self.singles: list[int] = []
        self.single_down = False
        self.three = anyio.Event()  # set once 3 messages were acked

    def _acked(self) -> None:
        if len(self.singles) + sum(map(len, self.batches)) >= 3:
            self.three.set()

    async def batch_ack(self, _i: Any, _g: str, _t: str, handles: list[ExtraInfo]) -> bool:
        if self.batch == "unsupported":
            raise BrokerError("a", ResponseCode.REQUEST_CODE_NOT_SUPPORTED, "no")
        if self.batch == "down":
            raise RequestTimeout("a", 200151, 3.0)
        self.batches.append([h.offset for h in handles])
        self._acked()
        return True

    async def ack(self, _i: Any, _g: str, _t: str, h: ExtraInfo) -> bool:
        if self.single_down:
            raise RequestTimeout("a", 200051, 3.0)
        self.singles.append(h.offset)
        self._acked()
        return True


@pytest.fixture
def broker(monkeypatch: pytest.MonkeyPatch) -> Broker:
    fake = Broker()
    monkeypatch.setattr(pop_calls, "batch_ack", fake.batch_ack)
    monkeypatch.setattr(pop_calls, "ack", fake.ack)
    return fake


def acker(**options: Any) -> Acker:
    options.setdefault("batch_size", 3)
    options.setdefault("interval", 60.0)
    return Acker(None, "g", clock=lambda: NOW_MS / 1000, **options)  # type: ignore[arg-type]


async def test_a_full_batch_is_sent_at_once_per_broker(broker: Broker) -> None:
    acks = acker()
    async with anyio.create_task_group() as tg:
        await tg.start(acks.run)
        for offset in (1, 2):
            acks.add("t", handle(offset))
        acks.add("t", handle(7, broker="b"))  # the third: full, flushed now
        with anyio.fail_after(5):  # (the interval is a minute: only the full batch sends)
            await broker.three.wait()
        tg.cancel_scope.cancel()
    assert sorted(broker.batches) == [[1, 2]] and broker.singles == [7]  # one alone: ACK
    assert acks.pending == 0


async def test_a_broker_without_batch_ack_gets_single_acks_from_then_on(broker: Broker) -> None:
    broker.batch = "unsupported"
    acks = acker()
    for offset in (1, 2):
        acks.add("t", handle(offset))
    await acks.flush()
    broker.batch = "ok"  # (asked no more)
    for offset in (3, 4):
        acks.add("t", handle(offset))
    await acks.flush()
    assert broker.singles == [1, 2, 3, 4] and broker.batches == []
    assert acks.acked == 4


async def test_acks_a_failure_left_go_with_the_next_flush_unless_expired(broker: Broker) -> None:
    broker.batch = "down"
    acks = acker()
    acks.add("t", handle(1))
    acks.add("t", handle(2, pop_time=NOW_MS - 61_000))  # its invisible time is over
    await acks.flush()
    assert acks.pending == 1 and acks.expired == 1
    broker.single_down = True
    await acks.flush()  # one left: a single ACK, which fails too
    assert acks.pending == 1
    broker.single_down = False
    await acks.flush()
    assert broker.singles == [1] and acks.acked == 1 and acks.pending == 0


async def test_a_flush_cancelled_mid_send_keeps_the_acks_not_known_sent(
    broker: Broker, monkeypatch: pytest.MonkeyPatch
) -> None:
    entered = anyio.Event()

    async def stuck(_i: Any, _g: str, _t: str, handles: list[ExtraInfo]) -> bool:
        entered.set()
        await anyio.sleep_forever()
        raise AssertionError

    monkeypatch.setattr(pop_calls, "batch_ack", stuck)
    acks = acker()
    for offset in (1, 2):
        acks.add("t", handle(offset))
    acks.add("t", handle(3, broker="b"))
    async with anyio.create_task_group() as tg:
        tg.start_soon(acks.flush)  # (the stop cancels the acker in the middle of it)
        with anyio.fail_after(5):
            await entered.wait()
        tg.cancel_scope.cancel()
    assert acks.pending == 3  # none lost: the stop's last flush sends them
    monkeypatch.setattr(pop_calls, "batch_ack", broker.batch_ack)
    await acks.flush()
    assert broker.batches == [[1, 2]] and broker.singles == [3] and acks.pending == 0
