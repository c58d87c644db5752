from __future__ import annotations

from typing import Any

import anyio
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
    assert pq.remove([msgs[1]]) == 100  # 100 is still in process: it holds the queue back
    assert pq.remove([msgs[0]]) == 102
    assert pq.remove([msgs[2]]) == 103  # empty: one past the highest ever cached
    assert pq.remove([msgs[2]]) == 103  # removing twice is harmless
    assert (pq.count, pq.cached_bytes, pq.span) == (0, 0, 0)


def test_a_run_of_cached_offsets_is_removed_at_once_and_anything_else_one_by_one() -> None:
    pq = ProcessQueue(MQ, 0)
    msgs = [_msg(o, size=o + 1) for o in range(6)]
    pq.put(msgs)
    assert pq.remove(msgs[1:4]) == 0  # a run (one share's messages): 0 still holds it back
    assert (pq.count, pq.cached_bytes, pq.span) == (3, 1 + 5 + 6, 5)
    assert pq.remove([msgs[0], msgs[2], msgs[5]]) == 4  # not a run (2 is gone): one by one
    assert (pq.count, pq.cached_bytes) == (1, 5)


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
        committed = pq.remove([m])
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
        assert pq.remove([pq._messages[offset]]) == next((o for o in sorted(seen) if o > offset),
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
    returned: list[str] = []

    async def waiter(label: str) -> None:
        await pq.wait_arrival()
        returned.append(label)

    with anyio.fail_after(5):
        pq.put([_msg(0)])
        await pq.wait_arrival()  # something arrived since the last wait: returns at once
        async with anyio.create_task_group() as tg:
            tg.start_soon(waiter, "put")
            await anyio.wait_all_tasks_blocked()
            assert returned == []  # nothing new since the last wait: it waits
            pq.put([_msg(1)])
        async with anyio.create_task_group() as tg:
            tg.start_soon(waiter, "wake")
            await anyio.wait_all_tasks_blocked()
            assert returned == ["put"]  # re-armed after the put's wake-up
            pq.wake()
    assert returned == ["put", "wake"]


_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("put"), st.lists(st.integers(0, 80), max_size=10)),
        st.tuples(st.just("pull"), st.integers(1, 10)),  # (a run past the highest: bulk path)
        st.tuples(
            st.just("remove"), st.tuples(st.integers(0, 1000), st.integers(1, 4), st.integers(1, 2))
        ),  # (first, count, step)
        st.tuples(st.just("take"), st.integers(1, 6)),
        st.tuples(st.just("commit"), st.integers(0, 6)),
        st.tuples(st.just("rollback"), st.just(0)),
    ),
    max_size=60,
)


@given(_OPS)
def test_any_mix_of_puts_removes_and_takes_matches_a_plain_model(ops: list[Any]) -> None:
    pq = ProcessQueue(MQ, 0)
    cached: dict[int, MessageExt] = {}  # the model: every cached message, taken or not
    taken: list[int] = []
    highest = -1
    for step, value in ops:
        op: str = step
        arg: Any = value
        if step == "pull":
            op, arg = "put", list(range(highest + 1, highest + 1 + value))
        if op == "put":
            fresh = pq.put([_msg(o, size=o + 1) for o in arg])
            expected = [o for i, o in enumerate(arg) if o not in cached and o not in arg[:i]]
            assert [m.queue_offset for m in fresh] == expected
            cached.update((m.queue_offset, m) for m in fresh)
            highest = max([highest, *expected])
        elif op == "remove" and not taken:
            waiting = sorted(cached)
            if waiting:  # a run of cached offsets (step 1: one share's), or a scatter
                first, count, stride = arg
                chosen = waiting[first % len(waiting) :][: count * stride : stride]
                pq.remove([cached.pop(o) for o in chosen])
        elif op == "take" and not taken:
            taken = [m.queue_offset for m in pq.take(arg)]
            assert taken == sorted(cached)[:arg]
        elif op == "commit" and taken:
            count = min(arg, len(taken))
            for offset in taken[:count]:
                del cached[offset]
            pq.commit_taken(count)
            taken = []  # (the rest is put back)
        elif op == "rollback":
            pq.rollback_taken()
            taken = []
        waiting = sorted(o for o in cached if o not in taken)
        # (the lowest cached offset, taken or not: a lower one may come during a take)
        assert pq.commit_offset() == (min(cached) if cached else highest + 1)
        assert pq.span == (waiting[-1] - waiting[0] if waiting else 0)
        assert (pq.count, pq.cached_bytes) == (len(cached), sum(o + 1 for o in cached))


def test_a_lower_offset_that_comes_during_a_take_holds_the_commit_back() -> None:
    # (orderly: the taken messages are in a handler when a redelivered lower offset comes)
    pq = ProcessQueue(MQ, 5)
    pq.put([_msg(o) for o in range(5, 9)])
    assert [m.queue_offset for m in pq.take(2)] == [5, 6]
    late = _msg(4)
    assert pq.put([late]) == [late] and pq.commit_offset() == 4
    assert pq.commit_taken(1) == 4  # (5 consumed, 6 put back: 4 is still not)
    assert [m.queue_offset for m in pq.take(5)] == [4, 6, 7, 8]
