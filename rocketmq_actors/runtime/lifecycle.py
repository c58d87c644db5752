"""The ``async with`` lifecycle every actor owner shares.

Subclasses build their resources in :meth:`_open` on an ``AsyncExitStack`` (entered contexts,
callbacks); leaving ``async with`` first runs :meth:`_closing` (a graceful step such as
unregistering), then unwinds the stack in reverse order. If ``_open`` fails, what it already
built is unwound at once.

An exception raised in the body of ``async with`` comes out as itself: the task groups on the
stack would wrap it in (nested) exception groups, which callers of a client - like callers of
aiokafka - do not expect. Groups that hold anything else are raised as they are.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from types import TracebackType
from typing import Self

from rocketmq_actors.errors import ClientClosed, unwrap_group

__all__ = ["Lifecycle"]


class Lifecycle:
    _stack: AsyncExitStack | None = None

    @property
    def running(self) -> bool:
        return self._stack is not None

    def _check_running(self) -> None:
        if self._stack is None:
            raise ClientClosed(f"{type(self).__name__} is not running (use 'async with')")

    async def _open(self, stack: AsyncExitStack) -> None:
        raise NotImplementedError

    async def _closing(self) -> None:
        """Runs before the stack unwinds."""

    async def __aenter__(self) -> Self:
        if self._stack is not None:
            raise RuntimeError(f"{type(self).__name__} is already running")
        async with AsyncExitStack() as stack:
            await self._open(stack)
            self._stack = stack.pop_all()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        stack, self._stack = self._stack, None
        if stack is None:
            return None
        await self._closing()
        try:
            return await stack.__aexit__(exc_type, exc, tb)
        except BaseExceptionGroup as group:
            if exc is None or unwrap_group(group) is not exc:
                raise
        raise exc  # outside the handler: its cause and context stay the caller's own
