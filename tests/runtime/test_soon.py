"""CallBatch: calls queued in one step run together, in order, from one loop callback."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from rocketmq_actors.runtime.soon import Call, CallBatch


def _batch() -> tuple[CallBatch, list[tuple[Call, BaseException]]]:
    errors: list[tuple[Call, BaseException]] = []
    return CallBatch(lambda fn, exc: errors.append((fn, exc))), errors


async def _turn() -> None:
    """Until every callback the loop had queued before this call has run."""
    ran = asyncio.Event()
    asyncio.get_running_loop().call_soon(ran.set)
    await ran.wait()


async def test_calls_run_after_the_step_in_order_from_one_loop_callback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    batch, errors = _batch()
    loop = asyncio.get_running_loop()
    scheduled: list[Any] = []
    call_soon = loop.call_soon

    def counting(fn: Any, *args: Any, **kwargs: Any) -> asyncio.Handle:
        scheduled.append(fn)
        return call_soon(fn, *args, **kwargs)

    monkeypatch.setattr(loop, "call_soon", counting)
    seen: list[int] = []
    for i in range(5):
        batch.add(seen.append, i)
    assert seen == []  # not from inside the step that queued them
    await _turn()
    assert seen == [0, 1, 2, 3, 4] and errors == []
    assert scheduled.count(batch._run) == 1  # one loop callback for the five
    batch.add(seen.append, 5)  # a later step: one more
    await _turn()
    assert seen[-1] == 5 and scheduled.count(batch._run) == 2


async def test_a_raising_call_is_reported_and_the_others_run() -> None:
    batch, errors = _batch()
    seen: list[int] = []

    def bad(arg: int) -> None:
        raise RuntimeError(f"bug {arg}")

    def cancelled(_: int) -> None:  # (exception() of a cancelled future raises this)
        raise asyncio.CancelledError

    batch.add(seen.append, 1)
    batch.add(bad, 2)
    batch.add(cancelled, 3)
    batch.add(seen.append, 4)
    await _turn()
    assert seen == [1, 4]
    assert [(fn, type(exc)) for fn, exc in errors] == [
        (bad, RuntimeError), (cancelled, asyncio.CancelledError)
    ]  # fmt: skip


@pytest.mark.parametrize("queued_during_the_run", [True, False])
def test_an_interrupt_propagates_and_the_rest_run_first_on_the_next_turn(
    queued_during_the_run: bool,
) -> None:
    batch, errors = _batch()
    runs: list[object] = []
    batch._call_soon = runs.append  # (the turns, recorded: run by hand below)
    seen: list[int] = []

    def interrupt(_: int) -> None:
        if queued_during_the_run:  # (that add schedules the next run itself)
            batch.add(seen.append, 5)
        raise KeyboardInterrupt

    batch.add(seen.append, 1)
    batch.add(interrupt, 2)
    batch.add(seen.append, 3)
    batch.add(seen.append, 4)
    assert runs == [batch._run]
    with pytest.raises(KeyboardInterrupt):
        batch._run()
    assert seen == [1]
    assert runs == [batch._run, batch._run]  # one more turn, for the rest (and the new call)
    batch._run()
    expected = [1, 3, 4, 5] if queued_during_the_run else [1, 3, 4]
    assert seen == expected and errors == []  # none lost, none twice, the rest first
    assert batch._calls == [] and len(runs) == 2


async def test_a_report_that_fails_drops_no_call() -> None:
    seen: list[int] = []

    def failing_report(fn: Call, exc: BaseException) -> None:
        raise ValueError("the reporter's own bug")

    batch = CallBatch(failing_report)

    def bad(_: int) -> None:
        raise RuntimeError("bug")

    batch.add(bad, 1)
    batch.add(seen.append, 2)
    await _turn()
    assert seen == [2]


def test_outside_a_running_loop_nothing_is_queued() -> None:
    batch, _ = _batch()
    with pytest.raises(RuntimeError):
        batch.add(print, 1)
    assert batch._calls == []  # (a later add on a loop schedules its run)
