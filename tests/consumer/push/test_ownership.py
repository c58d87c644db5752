"""Where a push consumer starts a queue it takes over (Ownership.start_offset): the broker's
answer when it gives one (a committed offset, or 0 for a young queue - see
test_start_point_real.py), else as ``consume_from`` says, as Java's
RebalancePushImpl.computePullFromWhereWithException decides."""

from __future__ import annotations

from typing import Any

import anyio
import attrs
import pytest

from rocketmq_actors.consumer.core.options import ConsumeFrom
from rocketmq_actors.consumer.push import PushOptions, ownership
from rocketmq_actors.consumer.push.ownership import Ownership
from rocketmq_actors.errors import BrokerError
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


@attrs.define
class SlowStore:
    """Answers once every lookup it is waiting for is in flight; counts them per broker."""

    expected: int
    in_flight: dict[str, int] = attrs.Factory(dict)
    most: dict[str, int] = attrs.Factory(dict)
    all_in: anyio.Event = attrs.Factory(anyio.Event)
    asked: int = 0

    async def fetch_start(self, queue: MessageQueue) -> int | None:
        broker = queue.broker_name
        self.in_flight[broker] = self.in_flight.get(broker, 0) + 1
        self.most[broker] = max(self.most.get(broker, 0), self.in_flight[broker])
        self.asked += 1
        if sum(self.in_flight.values()) == self.expected:
            self.all_in.set()
        await self.all_in.wait()
        self.in_flight[broker] -= 1
        if queue.queue_id == 7:
            raise BrokerError(f"{broker}:10911", 1, "system busy")
        return queue.queue_id * 10


async def test_new_queues_look_their_offsets_up_side_by_side_at_most_n_per_broker() -> None:
    """A rebalance of thousands of queues must not pay one round trip per queue in a row:
    every lookup is in flight at once, up to the per-broker bound (there each broker has
    exactly that many waiting until all of them are: one after another would never get
    there). A failed lookup leaves its queue out, the others start."""
    queues = [MessageQueue("T", broker, i) for broker in ("a", "b") for i in range(100)]
    store = SlowStore(expected=2 * ownership.LOOKUPS_PER_BROKER)
    consumer = Consumer(store, PushOptions())  # type: ignore[arg-type]
    with anyio.fail_after(10):
        starts = await Ownership(consumer).start_offsets(queues)  # type: ignore[arg-type]
    assert store.most == {"a": ownership.LOOKUPS_PER_BROKER, "b": ownership.LOOKUPS_PER_BROKER}
    assert store.asked == 200
    failed = {MessageQueue("T", "a", 7), MessageQueue("T", "b", 7)}
    assert starts == {q: q.queue_id * 10 for q in queues if q not in failed}
