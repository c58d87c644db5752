"""CallBatch: calls queued in one step run together, in order, from one loop callback."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from rocketmq_actors.runtime.soon import Call, CallBatch


def _batch() -> tuple[CallBatch, list[tuple[Call, Exception]]]:
    errors: list[tuple[Call, Exception]] = []
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

    batch.add(seen.append, 1)
    batch.add(bad, 2)
    batch.add(seen.append, 3)
    await _turn()
    assert seen == [1, 3]
    assert [(fn, str(exc)) for fn, exc in errors] == [(bad, "bug 2")]


async def test_a_base_exception_propagates_and_the_rest_run_on_the_next_turn() -> None:
    batch, _ = _batch()
    seen: list[int] = []

    def interrupt(_: int) -> None:
        raise KeyboardInterrupt

    batch.add(seen.append, 1)
    batch.add(interrupt, 2)
    batch.add(seen.append, 3)
    with pytest.raises(KeyboardInterrupt):
        batch._run()  # (as the loop would, which lets a KeyboardInterrupt through)
    assert seen == [1]
    await _turn()
    assert seen == [1, 3]  # not lost


def test_outside_asyncio_a_call_runs_at_once() -> None:
    batch, errors = _batch()
    seen: list[int] = []
    batch.add(seen.append, 7)  # no running loop: as another backend's waiters do
    assert seen == [7] and errors == []
