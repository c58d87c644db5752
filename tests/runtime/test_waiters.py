from __future__ import annotations

import asyncio
import math
import time

import anyio
from structlog.testing import capture_logs

from rocketmq_actors.runtime.waiters import (
    DeadlineWatcher,
    Pending,
    _EventWaiter,
    set_results,
    waiter_factory,
)


async def test_asyncio_waiters_are_plain_loop_futures() -> None:
    # a task awaiting exactly an asyncio.Future takes the C fast path (a subclass does not)
    new_waiter, clock = waiter_factory()
    waiter = new_waiter()
    loop = asyncio.get_running_loop()
    assert type(waiter) is asyncio.Future
    assert waiter.get_loop() is loop
    # the stock loop's clock is time.monotonic, called straight (a frame less a request)
    assert type(loop).time is asyncio.BaseEventLoop.time
    assert clock is time.monotonic
    before = loop.time()
    assert before <= clock() <= loop.time()
    waiter.set_result(7)
    assert await waiter == 7


def test_a_loop_with_its_own_clock_and_futures_keeps_them() -> None:
    # uvloop's clock is its own (cached per iteration): a deadline must be on the loop's time
    made: list[asyncio.Future[object]] = []

    class Loop(asyncio.SelectorEventLoop):
        def time(self) -> float:
            return 1000.0 + super().time()

        def create_future(self) -> asyncio.Future[object]:
            made.append(super().create_future())
            return made[-1]

    async def main() -> None:
        new_waiter, clock = waiter_factory()
        loop = asyncio.get_running_loop()
        assert clock == loop.time and clock() >= 1000.0
        waiter = new_waiter()
        assert made == [waiter]

    loop = Loop()
    try:
        loop.run_until_complete(main())
    finally:
        loop.close()


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


async def test_an_event_waiters_raising_done_callback_is_logged_and_the_others_still_run() -> None:
    # (the backend-neutral waiter, as trio gets it: its callbacks run as it is resolved, so one
    # that raised went up into whatever resolved it - a connection's reader, a sender)
    waiter = _EventWaiter()
    called: list[object] = []

    def failing(_: object) -> None:
        raise ValueError("the callback's own bug")

    waiter.add_done_callback(failing)
    waiter.add_done_callback(called.append)
    with capture_logs() as logs:
        waiter.set_result(7)  # does not raise
    assert called == [waiter] and waiter.result() == 7
    (line,) = [e for e in logs if e["event"] == "waiter.callback_error"]
    assert "failing" in line["callback"] and isinstance(line["exc_info"], ValueError)


async def test_set_results_resolves_each_and_leaves_a_done_one_as_it_is() -> None:
    # an auto-batch's futures: one cancelled by its caller, one resolved already
    loop = asyncio.get_running_loop()
    futures = [loop.create_future() for _ in range(4)]
    futures[1].cancel()
    futures[2].set_result("first")
    set_results(futures, ["a", "b", "c", "d"])
    assert futures[1].cancelled() and futures[2].result() == "first"
    assert [futures[0].result(), futures[3].result()] == ["a", "d"]
    events = [_EventWaiter() for _ in range(3)]
    events[1].set_result("first")
    set_results(events, ["a", "b", "c"])
    assert [e.result() for e in events] == ["a", "first", "c"]
