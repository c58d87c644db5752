from __future__ import annotations

import anyio

from rocketmq_actors.runtime.signal import Signal


async def test_wait_returns_after_the_next_set_not_an_earlier_one() -> None:
    signal = Signal()
    signal.set()  # nobody waited: not kept
    woke: list[str] = []

    async def waiter() -> None:
        await signal.wait()
        woke.append("woke")

    async with anyio.create_task_group() as tg:
        tg.start_soon(waiter)
        await anyio.wait_all_tasks_blocked()
        assert woke == []  # the earlier set did not count
        signal.set()
    assert woke == ["woke"]


async def test_every_set_wakes_every_waiter_of_that_moment() -> None:
    signal = Signal()
    woke = 0

    async def waiter() -> None:
        nonlocal woke
        await signal.wait()
        woke += 1

    async with anyio.create_task_group() as tg:
        for _ in range(3):
            tg.start_soon(waiter)
        await anyio.wait_all_tasks_blocked()
        signal.set()
    assert woke == 3
