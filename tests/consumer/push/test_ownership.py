"""Where a push consumer starts a queue it takes over (Ownership.start_offset): the broker's
answer when it gives one (a committed offset, or 0 for a young queue - see
test_start_point_real.py), else as ``consume_from`` says, as Java's
RebalancePushImpl.computePullFromWhereWithException decides."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from rocketmq_actors.consumer.core.options import ConsumeFrom
from rocketmq_actors.consumer.push import PushOptions, ownership
from rocketmq_actors.consumer.push.ownership import Ownership
from rocketmq_actors.protocol.bodies import MessageQueue

QUEUE = MessageQueue("T", "b", 0)
RETRY = MessageQueue("%RETRY%G", "b", 0)


@attrs.define
class Store:
    answer: int | None

    async def fetch_start(self, queue: MessageQueue) -> int | None:
        return self.answer


@attrs.define
class Consumer:
    offsets: Store
    options: PushOptions
    consume_timestamp_ms: int | None = None
    instance: object = None


@pytest.fixture(autouse=True)
def _broker_offsets(monkeypatch: pytest.MonkeyPatch) -> None:
    async def max_offset(instance: object, queue: MessageQueue) -> int:
        return 100

    async def offset_for_time(instance: object, queue: MessageQueue, ms: int) -> int:
        return ms // 1000

    monkeypatch.setattr(ownership, "max_offset", max_offset)
    monkeypatch.setattr(ownership, "offset_for_time", offset_for_time)


async def _start(answer: int | None, consume_from: ConsumeFrom, queue: MessageQueue = QUEUE,
                 **kwargs: Any) -> int:  # fmt: skip
    consumer = Consumer(Store(answer), PushOptions(consume_from=consume_from), **kwargs)
    return await Ownership(consumer).start_offset(queue)  # type: ignore[arg-type]


@pytest.mark.parametrize("consume_from", list(ConsumeFrom))
async def test_the_brokers_answer_wins(consume_from: ConsumeFrom) -> None:
    assert await _start(0, consume_from, consume_timestamp_ms=42_000) == 0  # a young queue
    assert await _start(57, consume_from, consume_timestamp_ms=42_000) == 57  # committed


async def test_without_an_answer_consume_from_decides() -> None:
    assert await _start(None, ConsumeFrom.LAST_OFFSET) == 100
    assert await _start(None, ConsumeFrom.FIRST_OFFSET) == 0
    assert await _start(None, ConsumeFrom.TIMESTAMP, consume_timestamp_ms=42_000) == 42
    # a group's retry queue: from its beginning under LAST_OFFSET, its end under TIMESTAMP
    assert await _start(None, ConsumeFrom.LAST_OFFSET, RETRY) == 0
    assert await _start(None, ConsumeFrom.TIMESTAMP, RETRY, consume_timestamp_ms=42_000) == 100
