"""The source's offset planning steps, without a broker."""

from __future__ import annotations

import itertools

import pytest

from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.spark.offsets import (
    DataLost,
    QueueRange,
    flat,
    lost,
    nest,
    ranges,
    rate_limit,
    split,
)

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
