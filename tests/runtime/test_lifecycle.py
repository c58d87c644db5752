"""``async with`` a client: the body's own exception comes out as itself."""

from __future__ import annotations

from contextlib import AsyncExitStack

import anyio
import pytest

from rocketmq_actors.runtime.lifecycle import Lifecycle


class _Actor(Lifecycle):
    """Holds a task group (with a child) open across the body, as every client does."""

    def __init__(self, child_fails: bool = False) -> None:
        self.child_fails = child_fails
        self.ready = anyio.Event()

    async def _open(self, stack: AsyncExitStack) -> None:
        tg = await stack.enter_async_context(anyio.create_task_group())
        stack.callback(tg.cancel_scope.cancel)

        async def child() -> None:
            if self.child_fails:
                await self.ready.wait()
                raise KeyError("child")
            await anyio.sleep_forever()

        tg.start_soon(child)


async def test_body_exception_is_not_wrapped_and_keeps_its_cause() -> None:
    cause = OSError("root cause")
    with pytest.raises(ValueError, match="from the body") as info:
        async with _Actor():
            raise ValueError("from the body") from cause
    assert info.value.__cause__ is cause
    assert type(info.value) is ValueError  # not an ExceptionGroup


async def test_a_failing_child_still_raises_its_group() -> None:
    actor = _Actor(child_fails=True)
    with pytest.raises(BaseExceptionGroup) as info:
        async with actor:
            actor.ready.set()
            await anyio.sleep_forever()
    assert isinstance(info.value.exceptions[0], KeyError)
