"""The consumer lag gauge refreshed from the brokers' max offsets, without a pull: one request
per (broker, topic), per queue only for what that answer leaves out (fakes)."""

from __future__ import annotations

from collections.abc import Mapping

import anyio
import pytest

from rocketmq_actors.consumer.core.lag import LAG, ConsumerLag, record_lag
from rocketmq_actors.consumer.core.offsets import OffsetStore
from rocketmq_actors.consumer.core.process_queue import ProcessQueue
from rocketmq_actors.errors import AccessDenied, RequestTimeout
from rocketmq_actors.metrics import METRICS
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.codes import ResponseCode
from rocketmq_actors.protocol.records import MessageExt


def _message(offset: int) -> MessageExt:
    return MessageExt(
        topic=Q1.topic, body=b"m", raw_properties=b"", queue_id=1, queue_offset=offset,
        commit_log_offset=0, sys_flag=0, flag=0, born_timestamp=0, born_ip=b"\x7f\0\0\1",
        born_port=1, store_timestamp=0, store_ip=b"\x7f\0\0\1", store_port=2,
        reconsume_times=0, prepared_transaction_offset=0, body_crc=0,
    )  # fmt: skip


Q0 = MessageQueue("T_lag", "broker-a", 0)
Q1 = MessageQueue("T_lag", "broker-a", 1)


class Owner:
    group = "G_lag_unit"

    def __init__(self) -> None:
        self.offsets = OffsetStore()
        self.queues = {Q0: ProcessQueue(Q0, 0), Q1: ProcessQueue(Q1, 40)}

    def owned_queues(self) -> dict[MessageQueue, ProcessQueue]:
        return dict(self.queues)


def lag(queue: MessageQueue, group: str = Owner.group) -> float | None:
    for series in METRICS.snapshot().get(LAG, []):
        labels = series["labels"]
        if (labels["group"], labels["topic"], labels["queue"]) == (
            group, queue.topic, str(queue.queue_id)
        ):  # fmt: skip
            return float(series["value"])
    return None


@pytest.fixture(autouse=True)
def clean() -> None:
    METRICS.remove_gauges(LAG, group=Owner.group)
    METRICS.remove_gauges(LAG, group="G_other")


async def test_a_refresh_sets_each_owned_queue_from_the_broker_without_a_pull() -> None:
    owner = Owner()
    max_offsets = {Q0: 5, Q1: 50}
    asked: list[tuple[str, str]] = []

    async def of_broker(topic: str, broker: str) -> Mapping[MessageQueue, int]:
        asked.append((topic, broker))
        return dict(max_offsets)

    lag_of = ConsumerLag(owner, of_broker, no_queue_request, timeout=1.0)
    owner.offsets.update(Q0, 2)  # committed 2 of 5; Q1 has nothing committed: its next offset
    await lag_of.refresh()
    assert asked == [("T_lag", "broker-a")]  # one request for both queues
    assert lag(Q0) == 3 and lag(Q1) == 10
    max_offsets[Q0] = 9  # stored while the consumer is busy (or paused): no pull, yet seen
    await lag_of.refresh()
    assert lag(Q0) == 7
    owner.offsets.update(Q0, 9)  # consumed while idle
    await lag_of.refresh()
    assert lag(Q0) == 0


async def no_queue_request(queue: MessageQueue) -> int:
    raise AssertionError(f"a per-queue request for {queue}")


async def test_the_cost_is_one_request_per_broker_and_topic_whatever_the_queues() -> None:
    owner = Owner()
    owner.queues = {
        MessageQueue(topic, broker, i): ProcessQueue(MessageQueue(topic, broker, i), 0)
        for topic in ("T_lag", "T_lag2") for broker in ("broker-a", "broker-b")
        for i in range(256)
    }  # fmt: skip
    asked: list[tuple[str, str]] = []

    async def of_broker(topic: str, broker: str) -> Mapping[MessageQueue, int]:
        asked.append((topic, broker))
        return {q: 7 for q in owner.queues if (q.topic, q.broker_name) == (topic, broker)}

    await ConsumerLag(owner, of_broker, no_queue_request, timeout=1.0).refresh()
    assert sorted(asked) == [
        ("T_lag", "broker-a"), ("T_lag", "broker-b"), ("T_lag2", "broker-a"),
        ("T_lag2", "broker-b"),
    ]  # fmt: skip
    assert all(lag(q) == 7 for q in owner.queues)


async def test_a_queue_the_broker_leaves_out_or_a_refused_request_is_asked_queue_by_queue() -> None:
    owner = Owner()
    alone: list[MessageQueue] = []

    async def of_broker(topic: str, broker: str) -> Mapping[MessageQueue, int]:
        return {Q0: 5}  # (say Q1's topic were outside the group's subscriptions)

    async def refused(topic: str, broker: str) -> Mapping[MessageQueue, int]:
        raise AccessDenied("127.0.0.1:10911", ResponseCode.NO_PERMISSION, "no stats for you")

    async def max_offset(queue: MessageQueue) -> int:
        alone.append(queue)
        return 45

    await ConsumerLag(owner, of_broker, max_offset, timeout=1.0).refresh()
    assert alone == [Q1]
    assert lag(Q0) == 5 and lag(Q1) == 5
    await ConsumerLag(owner, refused, max_offset, timeout=1.0).refresh()
    assert sorted(alone) == [Q0, Q1, Q1]
    assert lag(Q0) == 45


def test_before_the_first_commit_the_oldest_message_in_process_is_the_base() -> None:
    owner = Owner()
    pq = owner.queues[Q1]  # pulls start at 40
    record_lag(owner.group, owner.offsets, pq, 45)
    assert lag(Q1) == 5
    pq.next_offset = 43  # 40..42 pulled, none consumed: all still lag
    pq.put([_message(40), _message(41), _message(42)])
    record_lag(owner.group, owner.offsets, pq, 45)
    assert lag(Q1) == 5


async def test_a_broker_that_fails_or_hangs_leaves_the_gauge_and_the_refresh_ends() -> None:
    owner = Owner()
    owner.offsets.update(Q0, 4)
    record_lag(owner.group, owner.offsets, owner.queues[Q0], 8)

    async def failing(topic: str, broker: str) -> Mapping[MessageQueue, int]:
        raise RequestTimeout("127.0.0.1:10911", 208, 3.0)

    async def hanging(topic: str, broker: str) -> Mapping[MessageQueue, int]:
        await anyio.sleep_forever()
        raise AssertionError

    with anyio.fail_after(5):
        await ConsumerLag(owner, failing, no_queue_request, timeout=1.0).refresh()
        await ConsumerLag(owner, hanging, no_queue_request, timeout=0.05).refresh()
    assert lag(Q0) == 4  # as it was


async def test_released_queues_and_a_stopped_consumer_lose_their_series_only() -> None:
    owner = Owner()

    async def of_broker(topic: str, broker: str) -> Mapping[MessageQueue, int]:
        return {Q0: 100, Q1: 100}

    lag_of = ConsumerLag(owner, of_broker, no_queue_request, timeout=1.0)
    record_lag("G_other", owner.offsets, owner.queues[Q0], 10)  # another group's: untouched
    await lag_of.refresh()
    assert lag(Q1) == 60
    del owner.queues[Q1]  # released
    await lag_of.refresh()
    assert lag(Q1) is None and lag(Q0) == 100
    lag_of.forget()
    assert lag(Q0) is None
    record_lag(owner.group, owner.offsets, owner.queues[Q0], 100)  # a pull ending meanwhile
    await lag_of.refresh()  # (not after a stop: the persister is gone; here to show forget)
    lag_of.forget()  # the second call, once the actors are gone, removes it
    assert lag(Q0) is None
    assert lag(Q0, group="G_other") == 10
