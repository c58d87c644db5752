"""The streaming source's planning against a fake cluster: brokers down, queues reset or
gone, retention, read limits; and the executor's pull loop against scripted pull answers."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import anyio
import anyio.lowlevel
import pytest
from anyio.from_thread import start_blocking_portal

from rocketmq_actors.consumer.core.brokercalls import PullResult, PullStatus, RawPull
from rocketmq_actors.errors import AccessDenied, BrokerError, ConnectError, ConnectionLost
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.codes import ResponseCode
from rocketmq_actors.protocol.recordcolumns import RecordColumns
from rocketmq_actors.protocol.records import MessageExt, decode_messages
from rocketmq_actors.spark import offsets, pulling
from rocketmq_actors.spark.offsets import DataLost, OffsetPlanner, QueueRange
from rocketmq_actors.spark.source_options import SourceOptions
from rocketmq_actors.testing.stored import encode_stored

A0, A1, B0 = (MessageQueue("t", "broker-a", 0), MessageQueue("t", "broker-a", 1),
              MessageQueue("t", "broker-b", 0))  # fmt: skip
BASE = {"namesrv": "127.0.0.1:9876", "topic": "t"}


class Cluster:
    """Each queue's [min, max) offsets; a broker in ``down`` answers nothing."""

    def __init__(self, stored: dict[MessageQueue, tuple[int, int]]) -> None:
        self.stored = stored
        self.down: set[str] = set()
        self.refused: set[MessageQueue] = set()
        self.asked: list[MessageQueue] = []

    def _check(self, queue: MessageQueue) -> tuple[int, int]:
        self.asked.append(queue)
        if queue.broker_name in self.down:
            raise ConnectError(queue.broker_name, "connection refused")
        if queue in self.refused:  # (its topic's error, not its broker's)
            raise BrokerError(queue.broker_name, ResponseCode.NO_PERMISSION, "no permission")
        return self.stored[queue]

    async def min_offset(self, instance: object, queue: MessageQueue) -> int:
        return self._check(queue)[0]

    async def max_offset(self, instance: object, queue: MessageQueue) -> int:
        return self._check(queue)[1]


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch) -> Cluster:
    fake = Cluster({A0: (0, 100), A1: (0, 50), B0: (0, 10)})
    monkeypatch.setattr(offsets, "min_offset", fake.min_offset)
    monkeypatch.setattr(offsets, "max_offset", fake.max_offset)

    async def queues(self: OffsetPlanner) -> list[MessageQueue]:
        return list(fake.stored)

    monkeypatch.setattr(OffsetPlanner, "route_queues", queues)
    return fake


def planner(**options: str) -> OffsetPlanner:
    return OffsetPlanner(None, SourceOptions.parse({**BASE, **options}, streaming=True))  # type: ignore[arg-type]


async def test_a_broker_down_keeps_its_queues_where_they_were(cluster: Cluster) -> None:
    cluster.down.add("broker-b")
    end = await planner().next_end({A0: 10, A1: 10, B0: 4}, None, None)
    assert end == {A0: 100, A1: 50, B0: 4}  # broker-a read on, broker-b waits


async def test_a_broker_down_is_asked_once_a_call_and_its_queues_wait_under_a_limit(
    cluster: Cluster,
) -> None:
    b1 = MessageQueue("t", "broker-b", 1)
    cluster.stored[b1] = (0, 10)
    cluster.down.add("broker-b")
    end = await planner().next_end({A0: 10, A1: 10, B0: 4, b1: 0}, None, 30)
    assert end[B0] == 4 and end[b1] == 0 and end[A0] + end[A1] == 50  # the limit on broker-a
    assert [q for q in cluster.asked if q.broker_name == "broker-b"] == [B0]  # b1 not asked


async def test_a_queue_its_broker_refuses_is_left_out_alone(cluster: Cluster) -> None:
    """An error about one queue (a topic without permission) does not take its broker's other
    queues out of the trigger: only an unreachable broker does."""
    cluster.refused.add(A0)
    end = await planner().next_end({A0: 10, A1: 10, B0: 4}, None, None)
    assert end == {A0: 10, A1: 50, B0: 10}


async def test_a_broker_that_dies_after_the_trigger_leaves_its_ranges_to_the_executors(
    cluster: Cluster,
) -> None:
    """Spark plans a batch's partitions after its trigger: a broker dead in between has its
    loss check skipped (the executors' pulls wait for it and see a loss themselves), and a
    queue it added starts where the trigger saw it start, else at 0."""
    new = MessageQueue("t", "broker-b", 1)
    cluster.stored[new] = (3, 10)
    cluster.stored[A0] = (5, 100)
    source = planner(failOnDataLoss="false")
    await source.next_end({A0: 10, A1: 0, B0: 0}, None, None)
    cluster.down.add("broker-b")
    assert await source.check_loss({A0: 0, A1: 0, B0: 2}) == {A0: 5, A1: 0, B0: 2}
    assert await source.first_of_new([new]) == {new: 3}
    assert await planner().first_of_new([new]) == {new: 0}  # (a restarted driver)
    with pytest.raises(DataLost):
        await planner().check_loss({A0: 0, B0: 2})  # broker-a's loss is still seen


async def test_a_new_queue_counts_from_its_first_offset_and_a_gone_one_keeps_its_offset(
    cluster: Cluster,
) -> None:
    gone = MessageQueue("t", "broker-c", 0)
    cluster.stored[B0] = (6, 10)  # new since the last trigger, its first 6 deleted
    end = await planner().next_end({A0: 100, A1: 50, gone: 7}, None, 3)
    assert end == {A0: 100, A1: 50, gone: 7, B0: 9}  # 3 of B0's 4 stored ones


async def test_offsets_that_went_back_are_data_loss_or_a_restart(cluster: Cluster) -> None:
    cluster.stored[A1] = (0, 10)  # the queue was recreated: 10 where 5000 were read
    with pytest.raises(DataLost, match="went back from 5000 to 10"):
        await planner().next_end({A0: 0, A1: 5000, B0: 0}, None, None)
    end = await planner(failOnDataLoss="false").next_end({A0: 0, A1: 5000, B0: 0}, None, None)
    assert end[A1] == 0  # the next batch reads the recreated queue from its start


async def test_deleted_offsets_do_not_use_up_the_read_limit(cluster: Cluster) -> None:
    cluster.stored[A0] = (90, 100)  # 0-89 deleted by retention
    end = await planner().next_end({A0: 0, A1: 50, B0: 10}, None, 5)
    assert end[A0] == 95  # five stored ones, not five of the deleted


async def test_available_now_caps_at_its_target(cluster: Cluster) -> None:
    end = await planner().next_end({A0: 0, A1: 0, B0: 0}, {A0: 40, A1: 50}, None)
    assert end == {A0: 40, A1: 50, B0: 0}  # B0 appeared after AvailableNow began


# ---- the executor's pull loop ----------------------------------------------------------------


def _messages(first: int, count: int) -> tuple[MessageExt, ...]:
    return tuple(decode_messages(_stored(range(first, first + count))))


def _stored(offsets: Iterable[int]) -> bytes:
    return b"".join(encode_stored(topic="t", body=b"", queue_offset=o) for o in offsets)


def _raw(result: PullResult) -> RawPull:
    """``result`` as a pull without decoding answers it (the loop's way without a filter)."""
    body = _stored(m.queue_offset for m in result.messages)
    return RawPull(result.status, result.next_offset, result.min_offset, result.max_offset, body)


class Pulls:
    """Pulls answered from a script: a result, or an error raised."""

    def __init__(self, answers: Sequence[PullResult | Exception]) -> None:
        self.answers: Iterator[PullResult | Exception] = iter(answers)
        self.asked: list[int] = []

    async def pull(self, queue: MessageQueue, offset: int, **kwargs: object) -> PullResult:
        self.asked.append(offset)
        result = next(self.answers)
        if isinstance(result, Exception):
            raise result
        return result

    async def pull_raw(self, queue: MessageQueue, offset: int, **kwargs: object) -> RawPull:
        return _raw(await self.pull(queue, offset, **kwargs))


def answer(
    status: PullStatus, next_offset: int, messages: tuple[MessageExt, ...] = ()
) -> PullResult:
    return PullResult(status, next_offset, 0, 0, messages)


async def _run(
    answers: Sequence[PullResult | Exception], part: QueueRange, monkeypatch: pytest.MonkeyPatch,
    **options: str,
) -> tuple[list[int], list[int]]:  # fmt: skip
    monkeypatch.setattr(pulling, "STALL_PAUSE", 0.0)
    monkeypatch.setattr(pulling, "RETRY_PAUSE", 0.0)
    settings = SourceOptions.parse({**BASE, **options}, streaming=True)
    send, receive = anyio.create_memory_object_stream[list[RecordColumns]](100)
    pulls = Pulls(answers)
    await pulling._pull_range(pulls, settings, part, send)  # type: ignore[arg-type]
    got = [o async for parts in receive for rows in parts for o in rows.queue_offsets]
    return got, pulls.asked


PART = QueueRange("t", "broker-a", 0, 10, 20)
FOUND, NONE, NO_MATCH, ILLEGAL = (PullStatus.FOUND, PullStatus.NO_NEW_MSG,
                                  PullStatus.NO_MATCHED_MSG, PullStatus.OFFSET_ILLEGAL)  # fmt: skip


async def test_a_range_is_read_to_its_end_and_trimmed_there(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    got, asked = await _run(
        [answer(FOUND, 15, _messages(10, 5)), answer(FOUND, 25, _messages(15, 10))],
        PART,
        monkeypatch,
    )
    assert got == list(range(10, 20)) and asked == [10, 15]


async def test_a_gap_without_a_filter_is_data_loss(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(DataLost, match="offsets 10-11"):
        await _run([answer(FOUND, 20, _messages(12, 8))], PART, monkeypatch)
    got, _ = await _run(
        [answer(FOUND, 20, _messages(12, 8))], PART, monkeypatch, failOnDataLoss="false"
    )
    assert got == list(range(12, 20))


async def test_moved_on_without_messages_is_loss_unless_a_filter_explains_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for status in (NO_MATCH, NONE, ILLEGAL):
        with pytest.raises(DataLost, match="offsets 10-13"):
            await _run([answer(status, 14)], PART, monkeypatch)
    got, asked = await _run([answer(NO_MATCH, 14), answer(FOUND, 20, _messages(17, 3))], PART,
                            monkeypatch, tags="a")  # fmt: skip
    assert got == [17, 18, 19] and asked == [10, 14]  # the broker skipped non-matching ones
    with pytest.raises(DataLost):  # an illegal offset is loss under a filter too
        await _run([answer(ILLEGAL, 14)], PART, monkeypatch, tags="a")


async def test_no_progress_is_retried_before_the_rest_counts_as_lost(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stalls = [answer(NO_MATCH, 10)] * 3
    got, asked = await _run([*stalls, answer(FOUND, 20, _messages(10, 10))], PART, monkeypatch)
    assert got == list(range(10, 20)) and asked == [10, 10, 10, 10]
    forever = [answer(NONE, 10)] * (pulling.STALL_RETRIES + 1)
    with pytest.raises(DataLost, match="offsets 10-19"):
        await _run(forever, PART, monkeypatch)


async def test_a_pull_its_broker_did_not_answer_is_retried_until_the_retry_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A master killed mid-pull, then restarting (refused connections), then gone from the
    route: the range is read whole once it answers. Past ``pullRetryTimeoutMs``, or on an
    error that no retry mends, the task fails with the error: never a range cut short."""
    down = [ConnectionLost("b:10911", "reset"), ConnectError("b:10911", "refused"),
            BrokerError("broker-a", ResponseCode.SERVICE_NOT_AVAILABLE, "no address")]  # fmt: skip
    got, asked = await _run([*down, answer(FOUND, 20, _messages(10, 10))], PART, monkeypatch)
    assert got == list(range(10, 20)) and asked == [10, 10, 10, 10]
    with pytest.raises(ConnectError):
        await _run([*down[1:2], answer(FOUND, 20, _messages(10, 10))], PART, monkeypatch,
                   pullRetryTimeoutMs="0")  # fmt: skip
    with pytest.raises(AccessDenied):
        await _run([AccessDenied("broker-a", ResponseCode.NO_PERMISSION, "no")], PART, monkeypatch)


async def test_the_progress_report_reuses_what_the_trigger_asked(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Spark calls reportLatestOffset right after latestOffset: no second round of
    offset requests to every broker for it."""
    asked: list[MessageQueue] = []
    counting = cluster.max_offset

    async def max_offset(instance: object, queue: MessageQueue) -> int:
        asked.append(queue)
        return await counting(instance, queue)

    monkeypatch.setattr(offsets, "max_offset", max_offset)
    source = planner()
    await source.next_end({A0: 10, A1: 10, B0: 4}, None, 5)
    trigger = len(asked)
    assert await source.reported_latest() == {A0: 100, A1: 50, B0: 10}  # not the limited end
    assert len(asked) == trigger  # nothing asked again
    await source.reported_latest()  # with no trigger before it: asked
    assert len(asked) == trigger + 3


class StoredQueue:
    """Pulls answered from offsets ``[0, stored)``, at most 10 a pull, later chunks sooner
    (so chunks pulled at once finish out of order); ``gone`` offsets were deleted."""

    def __init__(self, stored: int, gone: range = range(0)) -> None:
        self.stored, self.gone = stored, gone
        self.asked: list[int] = []
        self.in_flight = self.most_in_flight = 0

    async def pull(self, queue: MessageQueue, offset: int, **kwargs: object) -> PullResult:
        self.asked.append(offset)
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await anyio.sleep(0.001 * (10 - offset // 16 % 10))  # a fake broker's pace
        finally:
            self.in_flight -= 1
        if offset in self.gone:
            return answer(FOUND, self.gone.stop + 5, _messages(self.gone.stop, 5))
        count = min(10, self.stored - offset, int(kwargs["max_messages"]))  # type: ignore[call-overload]
        return answer(FOUND, offset + count, _messages(offset, count))

    async def pull_raw(self, queue: MessageQueue, offset: int, **kwargs: object) -> RawPull:
        return _raw(await self.pull(queue, offset, **kwargs))


async def test_a_range_pulled_in_chunks_at_once_arrives_whole_and_in_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pulls = StoredQueue(300)
    settings = SourceOptions.parse({**BASE, "pullBatchSize": "16"}, streaming=True)
    send, receive = anyio.create_memory_object_stream[list[RecordColumns]](1000)
    await pulling._pull_range(pulls, settings, QueueRange("t", "broker-a", 0, 5, 205), send)  # type: ignore[arg-type]
    got = [o async for parts in receive for rows in parts for o in rows.queue_offsets]
    assert got == list(range(5, 205))  # every offset once, in order
    chunk_starts = list(range(5, 205, 64))  # 200 offsets: 4 chunks of 4 pulls' worth
    assert set(chunk_starts) <= set(pulls.asked)  # each chunk asked from its own start
    assert {5 + 16, 5 + 32} & set(pulls.asked) == set()  # (10 a pull: from 5, 15, 25...)
    assert len(pulls.asked) == 7 * 3 + 1  # 64, 64, 64 and 8 offsets, 10 a pull
    assert pulls.most_in_flight == pulling.PULLS_IN_FLIGHT  # chunks pulled at once


def test_a_chunk_is_sixteen_pulls_worth_unless_the_range_or_the_batch_is_short() -> None:
    assert pulling._chunk_size(64, 37_500) == 64 * pulling.CHUNK_PULLS
    assert pulling._chunk_size(64, 64 * 4 * 16) == 64 * 16
    assert pulling._chunk_size(64, 64 * 4 * 16 + 1) == 64 * 16
    assert pulling._chunk_size(64, 64 * 4 * 3) == 64 * 3  # still 4 chunks at once
    assert pulling._chunk_size(64, 64 * 4 * 3 - 1) == 64 * 3
    assert pulling._chunk_size(64, 100) == 64
    assert pulling._chunk_size(64, 1) == 64
    # a large pullBatchSize: the chunks pulled at once hold at most a record batch's rows
    assert pulling._chunk_size(256, 10**6) == 256 * 4
    assert pulling._chunk_size(1000, 10**6) == 1000
    assert pulling._chunk_size(5000, 10**6) == 5000  # (one pull's worth, whatever its size)


async def test_a_lost_chunk_fails_the_range_with_its_own_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pulls = StoredQueue(300, gone=range(79, 82))  # inside the second chunk
    settings = SourceOptions.parse({**BASE, "pullBatchSize": "16"}, streaming=True)
    send, receive = anyio.create_memory_object_stream[list[RecordColumns]](1000)
    with pytest.raises(DataLost, match="offsets 79-81"):  # itself, not an exception group
        await pulling._pull_range(pulls, settings, QueueRange("t", "broker-a", 0, 5, 205), send)  # type: ignore[arg-type]
    got = [o async for parts in receive for rows in parts for o in rows.queue_offsets]
    assert got == list(range(5, 69))  # the chunk before it, in order; nothing after it


def _columns(first: int, count: int) -> RecordColumns:
    columns = RecordColumns()
    columns.add_messages(_messages(first, count))
    return columns


async def test_a_record_batch_gathers_whole_chunks_and_their_parts_in_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(pulling, "ROWS_PER_BATCH", 5)
    send, receive = anyio.create_memory_object_stream[list[RecordColumns]](10)
    async with send:
        for chunk in ([_columns(0, 2), _columns(2, 2)], [_columns(4, 3)], [], [_columns(7, 2)]):
            await send.send(chunk)
    batches = []
    while (batch := await pulling._next_batch(receive, "t", "broker-a")) is not None:
        batches.append(batch.column("queue_offset").to_pylist())
    assert batches == [list(range(7)), [7, 8]]  # 5 rows or more, whole chunks, then the rest


def test_a_range_stops_pulling_when_spark_stops_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pulling, "ROWS_PER_BATCH", 64)
    pulls = StoredQueue(100_000)
    settings = SourceOptions.parse({**BASE, "pullBatchSize": "16"}, streaming=False)
    with start_blocking_portal() as portal:
        part = QueueRange("t", "broker-a", 0, 0, 100_000)
        reading = pulling._read_one(portal, pulls, settings, part)  # type: ignore[arg-type]
        first = next(reading)
        assert first.column("queue_offset").to_pylist()[:3] == [0, 1, 2]
        reading.close()  # (a LIMIT reached)
        asked = len(pulls.asked)
        assert pulls.in_flight == 0  # every pull's task ended, none left running
        assert asked < 100  # it stopped near the first batch, not at the range's end
        portal.call(anyio.lowlevel.checkpoint)
    assert len(pulls.asked) == asked


async def test_a_batch_ends_before_the_first_message_at_or_after_a_time(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """endingTimestamp / endingOffsetsByTimestamp (as Spark's Kafka source): a queue ends,
    exclusive, at its first offset stored at or after the time; queues the JSON leaves out at
    their latest."""
    asked: list[tuple[MessageQueue, int]] = []

    async def first_offset_at(instance: object, group: str, queue: MessageQueue, ts: int) -> int:
        asked.append((queue, ts))
        return min(ts // 10, cluster.stored[queue][1])  # (a message every 10 ms, say)

    monkeypatch.setattr(offsets, "first_offset_at", first_offset_at)

    def batch(**options: str) -> OffsetPlanner:
        parsed = SourceOptions.parse({**BASE, **options}, streaming=False)
        return OffsetPlanner(None, parsed)  # type: ignore[arg-type]

    every = batch(endingTimestamp="300")
    assert await every.ending([A0, A1, B0]) == {A0: 30, A1: 30, B0: 10}
    assert {ts for _, ts in asked} == {300}
    named = batch(endingOffsetsByTimestamp='{"t": {"broker-a:1": 200}}')
    assert await named.ending([A0, A1, B0]) == {A0: 100, A1: 20, B0: 10}


async def test_assign_plans_the_named_queues_only(cluster: Cluster) -> None:
    """``assign``: the other queues of the topic are neither asked about nor read."""
    source = OffsetPlanner(None, SourceOptions.parse(  # type: ignore[arg-type]
        {"namesrv": "127.0.0.1:9876", "assign": '{"t": ["broker-a:1", "broker-b:0"]}'},
        streaming=True,
    ))  # fmt: skip
    end = await source.next_end({}, None, None)
    assert end == {A1: 50, B0: 10}
    assert A0 not in cluster.asked
