"""The body of ``async with client:`` (:class:`~.lifecycle.Lifecycle`'s): if the client fails
while a task is inside, that task is interrupted, and ``__aexit__`` raises the client's error
instead of the interruption.

Under asyncio the task itself is cancelled, and the cancellation taken back on the way out (as
``asyncio.timeout`` takes its own back), whichever task leaves (a pytest-asyncio fixture yields
from inside ``async with`` and leaves it in another). Under trio, which cancels only through
scopes, a cancel scope is put around the body when it is entered, and left in ``__aexit__``:
as trio requires of any scope, in the task that entered it.
"""

from __future__ import annotations

import asyncio
import contextlib
from types import TracebackType
from typing import Any

import anyio

from rocketmq_actors.errors import ClientClosed
from rocketmq_actors.logs import get_logger

__all__ = ["BodyLink"]

log = get_logger("rocketmq_actors.runtime")


class BodyLink:
    """What a lifecycle keeps of the task inside its ``async with``."""

    _loop: Any
    _error: BaseException | None

    def _describe(self) -> str:
        raise NotImplementedError

    async def _stop_and_wait(self, timeout: float | None = None) -> None:
        raise NotImplementedError

    def _init_body(self) -> None:
        # the task inside ``async with`` (interrupted if the client fails), the cancellations
        # it had pending when it entered, and whether we cancelled it
        self._body: asyncio.Task[Any] | None = None
        self._body_cancelling = 0
        self._body_cancelled = False
        self._body_scope: anyio.CancelScope | None = None  # trio: the body's, entered with it

    def _enter_body(self) -> None:
        """The calling task is now inside ``async with``."""
        self._body_cancelled = False
        if isinstance(self._loop, asyncio.AbstractEventLoop):
            task = asyncio.current_task()
            assert task is not None
            self._body, self._body_cancelling = task, task.cancelling()
        else:  # trio: a scope around the body, left in __aexit__
            self._body_scope = anyio.CancelScope()
            self._body_scope.__enter__()

    def _interrupt_body(self) -> bool:
        """Cancel the task inside ``async with`` (once), as a cancel scope around the body
        would: ``__aexit__`` takes the cancellation back and raises the client's error. True
        if there is such a task to tell."""
        if (scope := self._body_scope) is not None:  # trio
            self._body_cancelled = True
            scope.cancel()
            return True
        task = self._body
        if task is None or task.done():
            return False
        if not self._body_cancelled:
            self._body_cancelled = True
            task.cancel(f"{self._describe()} failed")
        return True

    async def _exit_body(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Leave ``async with``: the bounded stop, then the client's error if its failure
        interrupted the body (or the body ended without an exception of its own); the body's
        own exception (a cancellation included) goes on unchanged."""
        if (scope := self._body_scope) is not None:  # trio: the scope first, taking back the
            self._body_scope = None  # cancellation of the client's failure (only its own)
            try:
                absorbed = bool(scope.__exit__(exc_type, exc, tb))
            except BaseException:  # (left in another task, misnested...): stopped all the same
                with anyio.CancelScope(shield=True):
                    await self._stop_and_wait()
                raise
            return await self._leave(self._body_cancelled and (exc is None or absorbed), exc)
        task, self._body = self._body, None
        ours = (self._body_cancelled and task is not None
                and task is asyncio.current_task())  # fmt: skip
        only_ours = False
        if ours:
            assert task is not None
            only_ours = task.uncancel() <= self._body_cancelling
            if only_ours and exc_type is None:  # (not delivered yet: absorb it here)
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.sleep(0)
        interrupted = (
            ours and only_ours and (exc_type is None or exc_type is asyncio.CancelledError)
        )
        await self._leave(interrupted, exc)

    async def _leave(self, interrupted: bool, exc: BaseException | None) -> None:
        with anyio.CancelScope(shield=True):
            await self._stop_and_wait()
        error = self._error
        if interrupted or (exc is None and error is not None):
            raise error or ClientClosed(f"{self._describe()} stopped")
        if exc is not None and error is not None and error is not exc:
            log.warning("client.error_superseded", client=self._describe(), error=repr(error),
                        body_error=repr(exc))  # fmt: skip
