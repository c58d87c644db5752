"""Which event loop runs this thread, whatever anyio backend the application chose: asyncio's
(or uvloop's) loop itself, or, under trio, a :class:`TrioLoop` standing for the trio run (the
few loop methods the client calls: ``call_soon``, ``call_soon_threadsafe``, ``is_closed``).

A client's host task (:mod:`.lifecycle`) is a task of the loop's own, not of the caller's task
group: an asyncio task, or a trio *system task* (:func:`spawn_host`), which runs in a copy of
the caller's context as an asyncio task does.
"""

from __future__ import annotations

import asyncio
import contextvars
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from rocketmq_actors.errors import WrongEventLoop

__all__ = ["Host", "TrioLoop", "current_loop", "running_loop", "spawn_host"]

_asyncio_loop = asyncio._get_running_loop  # the running loop or None, without raising


class TrioLoop:
    """A trio run, as the client's code calls an event loop."""

    __slots__ = ("__weakref__", "_closed", "token")

    def __init__(self, token: Any) -> None:
        self.token = token
        self._closed = False

    def call_soon(self, fn: Callable[..., object], *args: Any) -> None:
        self.token.run_sync_soon(fn, *args)

    def call_soon_threadsafe(self, fn: Callable[..., object], *args: Any) -> None:
        trio = sys.modules["trio"]
        try:
            self.token.run_sync_soon(fn, *args)
        except trio.RunFinishedError:  # (the run has ended: nothing to tell)
            self._closed = True

    def is_closed(self) -> bool:
        return self._closed


_trio_loop: Any = None  # a trio RunVar, made on first use: the run's one TrioLoop


def current_loop() -> Any | None:
    """The event loop running in this thread (asyncio's, or the trio run's one
    :class:`TrioLoop`), or None."""
    loop = _asyncio_loop()
    if loop is not None:
        return loop
    trio = sys.modules.get("trio")
    if trio is None:
        return None
    global _trio_loop  # noqa: PLW0603 - made once, when trio is first met
    if _trio_loop is None:
        _trio_loop = trio.lowlevel.RunVar("rocketmq_actors_loop")
    try:
        return _trio_loop.get()
    except LookupError:
        found = TrioLoop(trio.lowlevel.current_trio_token())
        _trio_loop.set(found)
        return found
    except RuntimeError:  # (no trio run in this thread)
        return None


class Host:
    """A host task, as its client handles it."""

    __slots__ = ("_cancel", "_cancelling")

    def __init__(self, cancel: Callable[[], object], cancelling: Callable[[], bool]) -> None:
        self._cancel, self._cancelling = cancel, cancelling

    def cancel(self) -> None:
        self._cancel()

    def cancelling(self) -> bool:
        """Whether it is being cancelled (from outside: the event loop is closing)."""
        return self._cancelling()


def running_loop() -> Any:
    """:func:`current_loop`, or :class:`WrongEventLoop` when none runs in this thread."""
    loop = current_loop()
    if loop is None:
        raise WrongEventLoop(
            "rocketmq-actors runs in an event loop (asyncio, uvloop or trio, through anyio); "
            "none is running in this thread"
        )
    return loop


def spawn_host(
    loop: Any,
    main: Callable[[], Awaitable[None]],
    *,
    name: str,
    on_error: Callable[[BaseException], None],
) -> Host:
    """Run ``main()`` as a task of ``loop``'s own. What it raises (besides a cancellation)
    goes to ``on_error`` under trio (a system task may not raise); an asyncio task keeps it,
    retrieved."""
    if isinstance(loop, TrioLoop):
        trio = sys.modules["trio"]
        scope = anyio.CancelScope()
        ending: list[Any] = []  # the system nursery's scope: cancelled when the run ends

        async def host() -> None:
            ending.append(trio.lowlevel.current_task().parent_nursery.cancel_scope)
            with scope:
                try:
                    await main()
                except anyio.get_cancelled_exc_class():
                    raise
                except BaseException as exc:
                    on_error(exc)

        trio.lowlevel.spawn_system_task(host, name=name, context=contextvars.copy_context())

        def cancelling() -> bool:
            return scope.cancel_called or any(s.cancel_called for s in ending)

        return Host(scope.cancel, cancelling)
    task: asyncio.Task[None] = loop.create_task(main(), name=name)
    task.add_done_callback(_retrieved)
    return Host(task.cancel, lambda: task.cancelling() > 0)


def _retrieved(host: asyncio.Task[None]) -> None:
    """What a host task raised is its client's error, already logged and raised to the
    application: retrieved here, it is not also "never retrieved" on stderr."""
    if not host.cancelled():
        host.exception()
