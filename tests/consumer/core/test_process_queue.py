from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rocketmq_actors.consumer.core.process_queue import ProcessQueue
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.records import MessageExt

MQ = MessageQueue("t", "b", 0)


def _msg(offset: int, size: int = 10) -> MessageExt:
    return MessageExt(
        topic="t", body=b"x" * size, raw_properties=b"", queue_id=0, queue_offset=offset,
        commit_log_offset=0, sys_flag=0, flag=0, born_timestamp=0, born_ip=b"\0" * 4,
        born_port=0, store_timestamp=0, store_ip=b"\0" * 4, store_port=0, reconsume_times=0,
        prepared_transaction_offset=0, body_crc=0,
    )  # fmt: skip


def test_commit_offset_is_the_smallest_unconsumed() -> None:
    pq = ProcessQueue(MQ, 100)
    assert pq.commit_offset() == 100  # nothing cached yet: where we start
    msgs = [_msg(o) for o in (100, 101, 102)]
    assert pq.put(msgs) == msgs and (pq.count, pq.cached_bytes, pq.span) == (3, 30, 2)
    assert pq.remove(msgs[1]) == 100  # 100 is still in process: it holds the queue back
    assert pq.remove(msgs[0]) == 102
    assert pq.remove(msgs[2]) == 103  # empty: one past the highest ever cached
    assert pq.remove(msgs[2]) == 103  # removing twice is harmless


def test_duplicates_are_not_handed_out_twice() -> None:
    pq = ProcessQueue(MQ, 0)
    pq.put([_msg(0)])
    assert pq.put([_msg(0), _msg(1)]) == [pq._messages[1]]


@given(st.lists(st.integers(0, 200), unique=True, min_size=1), st.randoms())
def test_never_commits_past_an_unconsumed_message(offsets: list[int], rnd: object) -> None:
    pq = ProcessQueue(MQ, 0)
    msgs = [_msg(o) for o in offsets]
    pq.put(msgs)
    order = list(msgs)
    rnd.shuffle(order)  # type: ignore[attr-defined]
    consumed: set[int] = set()
    for m in order:
        committed = pq.remove(m)
        consumed.add(m.queue_offset)
        unconsumed = [o for o in offsets if o not in consumed]
        assert committed == (min(unconsumed) if unconsumed else max(offsets) + 1)


@given(st.lists(st.lists(st.integers(0, 60), max_size=12), max_size=6))
def test_puts_hand_out_each_offset_once_whatever_the_order(puts: list[list[int]]) -> None:
    # ascending pulls past the cache take a bulk path; anything else the per-message one
    pq = ProcessQueue(MQ, 0)
    seen: dict[int, int] = {}
    for offsets in puts:
        msgs = [_msg(o, size=o + 1) for o in offsets]
        expected = []
        for m in msgs:
            if m.queue_offset not in seen:
                seen[m.queue_offset] = len(m.body)
                expected.append(m)
        assert pq.put(msgs) == expected
    assert pq.count == len(seen) and pq.cached_bytes == sum(seen.values())
    assert pq.span == (max(seen) - min(seen) if seen else 0)
    assert pq.commit_offset() == (min(seen) if seen else 0)
    assert pq.highest == max(seen, default=-1)
    for offset in sorted(seen):  # consumed in order, the commit offset walks up through them
        assert pq.remove(pq._messages[offset]) == next((o for o in sorted(seen) if o > offset),
                                                       max(seen) + 1)  # fmt: skip


def test_orderly_take_commit_and_rollback_keep_offset_order() -> None:
    pq = ProcessQueue(MQ, 0)
    pq.put([_msg(o) for o in (2, 0, 1, 3)])
    first = pq.take(2)
    assert [m.queue_offset for m in first] == [0, 1]
    assert pq.count == 4 and pq.commit_offset() == 0  # taken messages still hold the offset
    pq.rollback_taken()  # failed: the same two come out first again
    assert [m.queue_offset for m in pq.take(3)] == [0, 1, 2]
    assert pq.commit_taken() == 3 and pq.count == 1 and pq.cached_bytes == 10
    assert [m.queue_offset for m in pq.take(5)] == [3]
    assert pq.commit_taken() == 4
    assert pq.take(1) == [] and pq.commit_taken() == 4  # nothing left: one past the highest


async def test_wait_arrival_is_woken_by_put_and_by_wake() -> None:
    pq = ProcessQueue(MQ, 0)
    pq.put([_msg(0)])
    await pq.wait_arrival()  # something arrived since the last wait: returns at once
    pq.wake()
    await pq.wait_arrival()
