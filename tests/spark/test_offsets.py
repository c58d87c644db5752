"""The source's offset planning steps, without a broker."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.spark.offsets import (
    DataLost,
    PackedRanges,
    QueueRange,
    flat,
    lost,
    nest,
    pack,
    ranges,
    rate_limit,
    split,
)
from rocketmq_actors.spark.reader import partitions_of
from rocketmq_actors.spark.source_options import SourceOptions

BASE_OPTIONS = {"namesrv": "127.0.0.1:9876", "topic": "t"}
A0, A1, B0 = (MessageQueue("t", "broker-a", 0), MessageQueue("t", "broker-a", 1),
              MessageQueue("t", "broker-b", 0))  # fmt: skip


def test_offsets_nest_and_flatten_by_broker_and_queue() -> None:
    offsets = {A0: 3, B0: 7, MessageQueue("u", "broker-a", 12): 1}
    nested = nest(offsets)
    assert nested == {"t": {"broker-a:0": 3, "broker-b:0": 7}, "u": {"broker-a:12": 1}}
    assert flat(nested) == offsets
    assert flat({"t": {"my:broker:2": 5}}) == {MessageQueue("t", "my:broker", 2): 5}


def test_rate_limit_shares_by_backlog_and_never_exceeds_the_limit() -> None:
    start = {A0: 0, A1: 100, B0: 10}
    latest = {A0: 300, A1: 200, B0: 10}  # backlogs 300, 100, 0
    limited = rate_limit(start, latest, 40)
    assert limited == {A0: 30, A1: 110, B0: 10}
    assert rate_limit(start, latest, 1000) == latest  # under the limit: everything
    tiny = rate_limit(start, latest, 1)  # rounding leaves 0 each: the largest backlog moves
    assert sum(tiny[q] - start[q] for q in start) == 1 and tiny[A0] == 1
    for limit in range(1, 420, 7):
        moved = rate_limit(start, latest, limit)
        assert sum(moved[q] - start[q] for q in start) == min(limit, 400)
        assert all(start[q] <= moved[q] <= latest[q] for q in start)


def test_rate_limit_counts_a_new_queue_from_its_start() -> None:
    assert rate_limit({A0: 5, A1: 0}, {A0: 5, A1: 50}, 10) == {A0: 5, A1: 10}


def test_ranges_skip_empty_queues_and_split_to_min_partitions() -> None:
    planned = ranges({A0: 0, A1: 10, B0: 4}, {A0: 90, A1: 10, B0: 14})
    assert planned == [QueueRange("t", "broker-a", 0, 0, 90), QueueRange("t", "broker-b", 0, 4, 14)]
    assert split(planned, None) == planned and split(planned, 2) == planned
    pieces = split(planned, 5)
    assert len(pieces) >= 5
    for queue in (A0, B0):  # contiguous, covering each range exactly once
        mine = [
            p for p in pieces if (p.broker_name, p.queue_id) == (queue.broker_name, queue.queue_id)
        ]
        assert mine[0].start == next(r.start for r in planned if r.broker_name == queue.broker_name)
        assert all(a.end == b.start for a, b in itertools.pairwise(mine))
        assert sum(p.size for p in mine) == next(
            r.size for r in planned if r.broker_name == queue.broker_name
        )
    assert split([QueueRange("t", "b", 0, 0, 2)], 10) == [
        QueueRange("t", "b", 0, 0, 1),
        QueueRange("t", "b", 0, 1, 2),
    ]  # never an empty piece


def _key(r: QueueRange) -> tuple[str, int, int]:
    return (r.broker_name, r.queue_id, r.start)


def _flatten(partitions: list[QueueRange | PackedRanges]) -> list[QueueRange]:
    return [r for p in partitions for r in (p.ranges if isinstance(p, PackedRanges) else (p,))]


def test_small_ranges_share_partitions_a_multiple_of_the_cores() -> None:
    small = [QueueRange("t", "broker-a", q, 0, 37_500) for q in range(8)]
    one_core = pack(small, 100_000, 1)  # 300k offsets fill 3 partitions of 100k
    assert sorted(p.size for p in one_core) == [75_000, 112_500, 112_500]
    # each range once, none cut
    assert sorted(_flatten(one_core), key=_key) == sorted(small, key=_key)
    two_cores = pack(small, 100_000, 2)  # 3 rounded up to 4: each core gets two
    assert [p.size for p in two_cores] == [75_000] * 4
    many = pack(small, 100_000, 16)  # more cores than ranges: one partition per range
    assert many == small
    large = QueueRange("t", "broker-b", 0, 0, 250_000)
    mixed = pack([*small[:3], large, *small[3:5]], 100_000, 1)
    assert large in mixed and all(isinstance(p, PackedRanges) for p in mixed if p != large)
    assert sorted(_flatten(mixed), key=_key) == sorted([*small[:5], large], key=_key)
    one = pack([QueueRange("t", "broker-a", 0, 0, 10)], 100_000, 1)
    assert one == [QueueRange("t", "broker-a", 0, 0, 10)]  # a partition of one: the range
    assert pack(small, 0, 1) == small  # 0: one partition per range, as Kafka
    assert pack(small, 100_000, None) == small  # cores not known: no packing
    assert pack([], 100_000, 1) == []


@given(st.lists(st.integers(1, 500), max_size=30), st.integers(1, 800), st.integers(1, 6))
def test_packing_keeps_every_offset_once_and_shares_evenly(
    sizes: list[int], minimum: int, cores: int
) -> None:
    planned = [QueueRange("t", f"broker-{i % 3}", i, 5, 5 + n) for i, n in enumerate(sizes)]
    packed = pack(planned, minimum, cores)
    assert sorted(_flatten(packed), key=_key) == sorted(planned, key=_key)
    assert packed == pack(list(reversed(planned)), minimum, cores)  # the order does not matter
    small = [r for r in planned if r.size < minimum]
    shared = [p for p in packed if not (isinstance(p, QueueRange) and p.size >= minimum)]
    if small:
        filled = -(-sum(r.size for r in small) // minimum)  # ceil
        assert len(shared) == min(-(-filled // cores) * cores, len(small))
        sizes_shared = [p.size for p in shared]
        # largest first into the emptiest: no partition exceeds another by more than a range
        assert max(sizes_shared) - min(sizes_shared) <= max(r.size for r in small)


def test_the_largest_small_ranges_are_shared_out_first() -> None:
    """Queue order would give 12 and 8 offsets (3, 3, 4, 5, 5 each to the emptiest of two);
    largest first gives 9 and 11."""
    planned = [QueueRange("t", "broker-a", q, 0, size) for q, size in enumerate([3, 3, 4, 5, 5])]
    packed = pack(planned, 10, 1)
    assert sorted(p.size for p in packed) == [9, 11]


def test_min_partitions_splits_and_turns_packing_off() -> None:
    planned = [QueueRange("t", "broker-a", q, 0, 100) for q in range(4)]
    default = SourceOptions.parse(BASE_OPTIONS, streaming=False)
    assert default.min_offsets_per_partition == 300_000
    assert partitions_of(default, planned, 1) == [PackedRanges(tuple(planned))]
    assert partitions_of(default, planned, None) == planned
    split_up = SourceOptions.parse({**BASE_OPTIONS, "minPartitions": "8"}, streaming=False)
    assert len(partitions_of(split_up, planned, 1)) == 8
    kafka = SourceOptions.parse({**BASE_OPTIONS, "minOffsetsPerPartition": "0"}, streaming=True)
    assert partitions_of(kafka, planned, 1) == planned


def test_lost_offsets_raise_or_warn() -> None:
    with pytest.raises(DataLost, match="offsets 3-9 of t broker-a:0 were deleted"):
        lost(A0, 3, 10, fail=True)
    lost(A0, 3, 10, fail=False)  # a warning (spark.data_lost), no error


async def test_check_loss_moves_up_or_fails_by_fail_on_data_loss(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from rocketmq_actors.spark import offsets
    from rocketmq_actors.spark.source_options import SourceOptions

    stored_from = {A0: 10, A1: 0}

    async def first_stored(instance: object, queue: MessageQueue) -> int:
        return stored_from[queue]

    monkeypatch.setattr(offsets, "min_offset", first_stored)
    base = {"namesrv": "127.0.0.1:9876", "topic": "t"}
    warn = offsets.OffsetPlanner(
        None,  # type: ignore[arg-type]  # only min_offset is asked, patched above
        SourceOptions.parse({**base, "failOnDataLoss": "false"}, streaming=True),
    )
    assert await warn.check_loss({A0: 4, A1: 7}) == {A0: 10, A1: 7}
    strict = offsets.OffsetPlanner(None, SourceOptions.parse(base, streaming=True))  # type: ignore[arg-type]
    with pytest.raises(DataLost, match="offsets 4-9 of t broker-a:0"):
        await strict.check_loss({A0: 4, A1: 7})
    assert await strict.check_loss({A0: 10, A1: 0}) == {A0: 10, A1: 0}
