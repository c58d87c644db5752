"""WorkQueue: FIFO, bounded, cancellation-safe, closable."""

from __future__ import annotations

import asyncio

import anyio
import pytest

from rocketmq_actors.runtime.workqueue import WorkQueue
from tests.conftest import BACKEND

#: cancels an asyncio task between the hand-off to its future and its next step, which anyio
#: (and trio) never do: a cancelled scope waits for the task's next checkpoint
_ASYNCIO_ONLY = pytest.mark.skipif(BACKEND != "asyncio", reason="cancels an asyncio task "
                                   "between a hand-off and its next step")  # fmt: skip


async def test_fifo_and_direct_handoff() -> None:
    queue: WorkQueue[int] = WorkQueue(4)
    for i in range(3):
        await queue.put(i)
    assert [await queue.get() for _ in range(3)] == [0, 1, 2]
    got: list[int] = []
    async with anyio.create_task_group() as tg:

        async def getter() -> None:
            got.append(await queue.get())

        tg.start_soon(getter)
        await anyio.wait_all_tasks_blocked()  # the getter waits now
        await queue.put(7)  # handed straight to it
    assert got == [7] and len(queue) == 0


async def test_a_full_queue_makes_the_putter_wait() -> None:
    queue: WorkQueue[int] = WorkQueue(2)
    await queue.put(1)
    await queue.put(2)
    with anyio.move_on_after(0.05) as scope:
        await queue.put(3)
    assert scope.cancelled_caught and len(queue) == 2
    async with anyio.create_task_group() as tg:
        tg.start_soon(queue.put, 3)
        await anyio.wait_all_tasks_blocked()
        assert await queue.get() == 1  # frees a slot: the putter goes on
    assert [await queue.get(), await queue.get()] == [2, 3]


async def test_offer_places_what_needs_no_wait_and_refuses_the_rest() -> None:
    queue: WorkQueue[int] = WorkQueue(2)
    assert queue.offer(1) and queue.offer(2)
    assert not queue.offer(3) and len(queue) == 2  # full: refused, nothing lost or queued
    async with anyio.create_task_group() as tg:
        tg.start_soon(queue.put, 3)  # a putter waits for room
        await anyio.wait_all_tasks_blocked()
        assert not queue.offer(4)  # still full
        assert await queue.get() == 1  # frees a slot: the putter goes on
    assert [await queue.get(), await queue.get()] == [2, 3]
    # room while putters still wait: the slot a get freed belongs to the putter it woke
    assert queue.offer(1) and queue.offer(2)
    async with anyio.create_task_group() as tg:
        for item in (3, 4):  # (one after the other: the order they wait in)
            tg.start_soon(queue.put, item)
            await anyio.wait_all_tasks_blocked()
        assert await queue.get() == 1  # wakes the first putter; the second still waits
        assert not queue.offer(5)  # there is room, but not for an item that came later
        await anyio.wait_all_tasks_blocked()  # (the first putter placed its item)
        assert await queue.get() == 2  # room for the second putter
    assert [await queue.get(), await queue.get()] == [3, 4]
    got: list[int] = []
    async with anyio.create_task_group() as tg:

        async def getter() -> None:
            got.append(await queue.get())

        tg.start_soon(getter)
        await anyio.wait_all_tasks_blocked()
        assert queue.offer(9)  # handed straight to the waiting getter
    assert got == [9] and len(queue) == 0
    queue.close()
    with pytest.raises(anyio.ClosedResourceError):
        queue.offer(5)


@_ASYNCIO_ONLY
async def test_a_getter_cancelled_after_the_handoff_puts_the_item_back() -> None:
    """asyncio's hard case: the item is set on the getter's future, then its task is cancelled
    before it resumes (Task.cancel marks it; the coroutine sees CancelledError, not the
    item)."""
    queue: WorkQueue[str] = WorkQueue(4)
    task = asyncio.get_running_loop().create_task(queue.get())
    await asyncio.sleep(0)  # the getter waits now
    await queue.put("x")  # handed to its future ...
    task.cancel()  # ... and the task is cancelled before it runs again
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(queue) == 1 and await queue.get() == "x"


async def test_a_getter_cancelled_while_waiting_is_not_handed_anything() -> None:
    queue: WorkQueue[str] = WorkQueue(4)
    with anyio.move_on_after(0.01):
        await queue.get()
    await queue.put("y")
    assert len(queue) == 1 and await queue.get() == "y"


async def test_many_getters_and_putters_see_every_item_once() -> None:
    queue: WorkQueue[int] = WorkQueue(3, yield_every=4)
    seen: list[int] = []

    async def consume() -> None:
        try:
            while True:
                seen.append(await queue.get())
        except anyio.EndOfStream:
            return

    async with anyio.create_task_group() as tg:
        for _ in range(5):
            tg.start_soon(consume)
        async with anyio.create_task_group() as producers:
            for p in range(4):

                async def produce(p: int = p) -> None:
                    for i in range(250):
                        await queue.put(p * 1000 + i)

                producers.start_soon(produce)
        queue.close()
    assert sorted(seen) == sorted(p * 1000 + i for p in range(4) for i in range(250))


async def test_close_drains_then_ends() -> None:
    queue: WorkQueue[int] = WorkQueue(2)
    await queue.put(1)
    queue.close()
    assert await queue.get() == 1
    with pytest.raises(anyio.EndOfStream):
        await queue.get()
    with pytest.raises(anyio.ClosedResourceError):
        await queue.put(2)


def test_capacity_must_be_positive() -> None:
    with pytest.raises(ValueError, match="capacity"):
        WorkQueue(0)


def _take_one(item: list[str]) -> tuple[str, bool]:
    """A shared item: a list its getters take from the front, one element each."""
    return item.pop(0), bool(item)


async def test_an_item_shared_by_getters_leaves_with_its_last_part() -> None:
    queue: WorkQueue[list[str]] = WorkQueue(2)
    await queue.put(["a", "b", "c"])
    await queue.put(["d"])
    assert await queue.get_part(_take_one) == "a"
    assert len(queue) == 2  # the rest of the first item still holds its place in front
    assert [await queue.get_part(_take_one) for _ in range(3)] == ["b", "c", "d"]
    assert len(queue) == 0
    # a shared item holds one slot for all its parts: a putter waits until the last is taken
    await queue.put(["x", "y"])
    await queue.put(["z"])
    async with anyio.create_task_group() as tg:
        tg.start_soon(queue.put, ["w"])
        await anyio.wait_all_tasks_blocked()
        assert await queue.get_part(_take_one) == "x"
        assert queue._putters  # (part of the first item is left: no room yet)
        assert await queue.get_part(_take_one) == "y"  # the first item leaves: room
    assert [await queue.get_part(_take_one) for _ in range(2)] == ["z", "w"]


async def _parts_held_at_once(getters: int, *items: list[str]) -> list[str]:
    """``getters`` getters each take a part and hold it until every one has one; the items are
    offered, a step apart, once they all wait. The parts they took (a hand-off that stops
    short leaves a getter waiting: the deadline fails the test)."""
    queue: WorkQueue[list[str]] = WorkQueue(4)
    got: list[str] = []
    all_in = anyio.Event()

    async def getter() -> None:
        got.append(await queue.get_part(_take_one))
        if len(got) == getters:
            all_in.set()
        await all_in.wait()

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            for _ in range(getters):
                tg.start_soon(getter)
            await anyio.wait_all_tasks_blocked()  # (every getter waits now)
            for item in items:
                assert queue.offer(item)
                await anyio.lowlevel.checkpoint()
    assert len(queue) == 0
    return sorted(got)


async def test_waiting_getters_each_take_a_part_of_one_item() -> None:
    # (an item handed to a waiting getter goes on with what is left to the next one: the parts
    # of one item are worked on at once, not one getter after the other)
    assert await _parts_held_at_once(3, ["a", "b", "c"]) == ["a", "b", "c"]


@_ASYNCIO_ONLY
async def test_a_getter_cancelled_after_the_handoff_leaves_the_whole_item() -> None:
    queue: WorkQueue[list[str]] = WorkQueue(4)
    task = asyncio.get_running_loop().create_task(queue.get_part(_take_one))
    await asyncio.sleep(0)  # the getter waits now
    await queue.put(["a", "b"])  # handed to its future ...
    task.cancel()  # ... and cancelled before it takes a part
    with pytest.raises(asyncio.CancelledError):
        await task
    assert [await queue.get_part(_take_one) for _ in range(2)] == ["a", "b"]


async def test_items_put_while_getters_wait_behind_a_shared_one_reach_them_all() -> None:
    # (the first item is handed to a getter, which takes "a" and puts the rest in front; the
    # second is queued behind it, and the getters woken to look take the parts left of both,
    # the first item's last part included)
    assert await _parts_held_at_once(4, ["a", "b"], ["c", "d"]) == ["a", "b", "c", "d"]


@_ASYNCIO_ONLY
async def test_a_getter_woken_to_look_and_cancelled_passes_the_look_on() -> None:
    """As in the hand-off case above: woken to look, then its task is cancelled before it
    runs (an anyio scope would wait for its next checkpoint instead)."""
    queue: WorkQueue[list[str]] = WorkQueue(4)
    loop = asyncio.get_running_loop()
    first = loop.create_task(queue.get_part(_take_one))
    await asyncio.sleep(0)
    second = loop.create_task(queue.get_part(_take_one))
    await asyncio.sleep(0)
    third = loop.create_task(queue.get_part(_take_one))
    await asyncio.sleep(0)  # the three wait, in this order
    await queue.put(["a", "b", "c"])  # handed to the first
    await asyncio.sleep(0)  # the first takes "a" and wakes the second to look ...
    assert first.done() and first.result() == "a"
    second.cancel()  # ... which is cancelled before it runs: the third looks instead
    with pytest.raises(asyncio.CancelledError):
        await second
    assert await third == "b"
    assert await queue.get_part(_take_one) == "c" and len(queue) == 0 and not queue._looking
