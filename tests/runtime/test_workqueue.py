"""WorkQueue: FIFO, bounded, cancellation-safe, closable."""

from __future__ import annotations

import asyncio

import anyio
import pytest
from anyio.lowlevel import checkpoint

from rocketmq_actors.runtime.workqueue import WorkQueue


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
        await checkpoint()  # the getter waits now
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
        await checkpoint()
        assert await queue.get() == 1  # frees a slot: the putter goes on
    assert [await queue.get(), await queue.get()] == [2, 3]


async def test_offer_places_what_needs_no_wait_and_refuses_the_rest() -> None:
    queue: WorkQueue[int] = WorkQueue(2)
    assert queue.offer(1) and queue.offer(2)
    assert not queue.offer(3) and len(queue) == 2  # full: refused, nothing lost or queued
    async with anyio.create_task_group() as tg:
        tg.start_soon(queue.put, 3)  # a putter waits for room
        await checkpoint()
        assert not queue.offer(4)  # still full
        assert await queue.get() == 1  # frees a slot: the putter goes on
    assert [await queue.get(), await queue.get()] == [2, 3]
    # room while putters still wait: the slot a get freed belongs to the putter it woke
    assert queue.offer(1) and queue.offer(2)
    async with anyio.create_task_group() as tg:
        tg.start_soon(queue.put, 3)
        tg.start_soon(queue.put, 4)
        await checkpoint()
        assert await queue.get() == 1  # wakes the first putter; the second still waits
        assert not queue.offer(5)  # there is room, but not for an item that came later
        assert await queue.get() == 2  # room for the second putter
    assert [await queue.get(), await queue.get()] == [3, 4]
    got: list[int] = []
    async with anyio.create_task_group() as tg:

        async def getter() -> None:
            got.append(await queue.get())

        tg.start_soon(getter)
        await checkpoint()
        assert queue.offer(9)  # handed straight to the waiting getter
    assert got == [9] and len(queue) == 0
    queue.close()
    with pytest.raises(anyio.ClosedResourceError):
        queue.offer(5)


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
