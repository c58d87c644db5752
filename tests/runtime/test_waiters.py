from __future__ import annotations

import asyncio
import math

import anyio

from rocketmq_actors.runtime.waiters import DeadlineWatcher, Pending, waiter_factory


async def test_asyncio_waiters_are_plain_loop_futures() -> None:
    # a task awaiting exactly an asyncio.Future takes the C fast path (a subclass does not)
    new_waiter, clock = waiter_factory()
    waiter = new_waiter()
    assert type(waiter) is asyncio.Future
    assert clock == asyncio.get_running_loop().time
    waiter.set_result(7)
    assert await waiter == 7


async def test_the_watcher_expires_overdue_entries_and_keeps_the_rest() -> None:
    new_waiter, clock = waiter_factory()
    pending: dict[int, Pending] = {}
    expired: list[tuple[int, Pending]] = []
    done = anyio.Event()

    def expire(key: int, entry: Pending) -> None:
        expired.append((key, entry))
        done.set()

    watcher = DeadlineWatcher(pending, expire)
    soon = (new_waiter(), clock() + 0.01, 11, 0.01)
    late = (new_waiter(), math.inf, 12, 30.0)
    pending.update({1: soon, 2: late})
    async with anyio.create_task_group() as tg:
        tg.start_soon(watcher.run)
        watcher.track(soon[1])
        with anyio.fail_after(5):
            await done.wait()
        tg.cancel_scope.cancel()
    assert expired == [(1, soon)]
    assert pending == {2: late}
