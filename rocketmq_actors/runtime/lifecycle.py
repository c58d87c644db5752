"""The lifecycle every client shares: ``start()`` / ``stop()`` from any task, or ``async with``.

A client's actors do not run in the caller's task: :meth:`Lifecycle.start` creates a *host task*
of the client's own, which builds the client's resources (:meth:`Lifecycle._open`, on an
``AsyncExitStack``), reports ready, and keeps them until it is asked to stop. So a client can be
started in one task and stopped in another (a pytest fixture, FastAPI's startup and shutdown
hooks, aiokafka-style ``start()`` / ``stop()``), and a cancelled caller never tears the client's
task groups down from the wrong task.

Stopping is bounded: :meth:`stop` asks the host to stop, the host runs its graceful step
(:meth:`Lifecycle._closing`: stop pulling, drain sends, persist offsets) and unwinds the stack,
all within ``shutdown_timeout`` seconds. At that deadline whatever still runs is cancelled; a
host that still has not ended a second later is cancelled as a task and, failing that,
abandoned with an error log. ``stop()`` waits shielded, so a caller inside a cancelled scope
still gets the bounded graceful stop, then the cancellation.

``async with client:`` is ``start()`` then, on the way out, the same bounded stop, and may be
left in another task than the one that entered it (a pytest fixture that yields from inside
it); the body's own exception (a cancellation included) leaves unchanged. If the client fails
while the entering task is inside (an actor exhausted its restarts, a handler raised
``KeyboardInterrupt``), that task is cancelled at its next checkpoint and ``async with`` raises
the client's error instead (the cancellation taken back, as ``asyncio.timeout`` does). Errors
are typed: a start that fails raises a :class:`RocketMQError` (the original error as
``__cause__`` when it was not one), never an exception group.

One event loop: the host task belongs to the loop ``start()`` ran on; calls from another loop
raise :class:`WrongEventLoop`. Any anyio backend runs it: asyncio (or uvloop), or trio, where
the host is a system task (:mod:`.backend`) and ``async with`` puts a cancel scope around its
body (so, as trio requires of a scope, it is left in the task that entered it).
"""

from __future__ import annotations

import asyncio
import contextvars
import enum
import math
import os
import threading
from collections.abc import Callable
from contextlib import AsyncExitStack
from types import TracebackType
from typing import Any, Self

import anyio
import anyio.lowlevel

from rocketmq_actors.errors import (
    ClientClosed,
    ClientNotStarted,
    ClientStateError,
    ConfigError,
    InternalError,
    RocketMQError,
    StartupFailed,
    WrongEventLoop,
    unwrap_group,
)
from rocketmq_actors.logs import get_logger
from rocketmq_actors.runtime.backend import Host, current_loop, running_loop, spawn_host
from rocketmq_actors.runtime.body import BodyLink
from rocketmq_actors.runtime.checks import check_timeout
from rocketmq_actors.runtime.tree import Node

__all__ = ["Lifecycle", "State", "running_loop"]

log = get_logger("rocketmq_actors.runtime")

#: after the stop deadline: how long the cancelled host gets to unwind before it is cancelled
#: as a task, and then again before it is abandoned
STOP_GRACE = 1.0


class State(enum.Enum):
    NEW = "new"
    STARTING = "starting"
    RUNNING = "running"
    STOPPING = "stopping"
    STOPPED = "stopped"


# looked up once for the send path's check: on Python 3.11 an attribute of an Enum class costs
# several times a module global's (benchmarks/abtest.py, as in producer/sendloop.py)
_RUNNING = State.RUNNING

#: the client whose host task (or one of its actors) is running: a stop asked from inside
#: cannot wait for itself
_inside: contextvars.ContextVar[Lifecycle | None] = contextvars.ContextVar(
    "rocketmq_actors_inside", default=None
)

# the running check (once a send): on CPython 3.11 asking asyncio for the running loop makes a
# getpid system call each time. An asyncio loop says which thread runs it (``_thread_id``,
# None while stopped): compared with this thread's, the check is exact without it; other
# loops (uvloop) are asked as before.
_thread_id = threading.get_ident
_running = asyncio._get_running_loop  # asyncio's (uvloop's) running loop or None, in C
_current_loop = current_loop  # the running loop (a TrioLoop under trio) or None
_forks = 0  # forks this process is a child of: a client belongs to the process that started it


def _count_fork() -> None:
    global _forks  # noqa: PLW0603 - one counter for the process
    _forks += 1


os.register_at_fork(after_in_child=_count_fork)


class Lifecycle(BodyLink):
    """Subclasses build their resources in :meth:`_open` and may stop gracefully in
    :meth:`_closing`; both run in the host task. Actors call :meth:`_fail` to stop the client
    with an error the application sees."""

    def __init__(
        self,
        *,
        shutdown_timeout: float = 10.0,
        on_error: Callable[[BaseException], object] | None = None,
    ) -> None:
        self.shutdown_timeout = check_timeout("shutdown_timeout", shutdown_timeout)
        if on_error is not None and not callable(on_error):
            raise ConfigError(f"on_error must be callable, not {type(on_error).__name__}")
        self.on_error = on_error
        self._state = State.NEW
        self._loop: Any = None  # asyncio's loop, or a TrioLoop
        self._owner: Any = None  # the loop, if it says which thread runs it (asyncio's)
        self._forks = _forks  # the process it was started in
        self._host: Host | None = None  # the host task
        self._ready: anyio.Event | None = None  # set when started (or not)
        self._done: anyio.Event | None = None  # set when the host has ended
        self._start_error: BaseException | None = None
        self._error: BaseException | None = None  # what the client failed with, if it did
        self._stop_event: anyio.Event | None = None
        self._deadline = math.inf  # when the stop must be over (anyio clock)
        self._hard: anyio.CancelScope | None = None  # the host's outermost scope
        self._init_body()  # (the task inside ``async with``: .body)
        self._on_stopped: dict[object, Callable[[BaseException | None], None]] = {}

    # ---- to override ---------------------------------------------------------------------

    async def _open(self, stack: AsyncExitStack) -> None:
        raise NotImplementedError

    async def _closing(self) -> None:
        """The graceful step, before the stack unwinds (bounded by the stop deadline)."""

    def _describe(self) -> str:
        return type(self).__name__

    def describe(self) -> Node:
        """This client's live tree of actors (see :meth:`tree`)."""
        return Node(name=self._describe(), kind=type(self).__name__, state=self._state.value,
                    last_error=repr(self._error) if self._error else None)  # fmt: skip

    def tree(self) -> Node:
        """The live supervision tree: every actor of this client with its state, restarts,
        last error and mailbox depth (``tree().render()`` draws it)."""
        return self.describe()

    # ---- state ---------------------------------------------------------------------------

    @property
    def state(self) -> State:
        return self._state

    @property
    def running(self) -> bool:
        return self._state is State.RUNNING

    @property
    def error(self) -> BaseException | None:
        """The error the client failed with (None while it runs, or after a clean stop)."""
        return self._error

    async def wait_closed(self) -> None:
        """Until the client has stopped (a daemon run with ``start()`` waits here); raises
        the error it failed with, if it did."""
        if self._done is not None and not self._done.is_set():
            await self._done.wait()
        if self._error is not None:
            raise self._error

    def _check_running(self) -> None:
        """Raise unless the client is running and this is its event loop (cheap: the send
        path calls it)."""
        owner = self._owner
        if (
            self._state is not _RUNNING or _forks != self._forks
            or (_thread_id() != owner._thread_id if owner is not None
                else (_running() or _current_loop()) is not self._loop)
        ):  # fmt: skip
            self._raise_not_running()

    def _raise_not_running(self) -> None:
        name = self._describe()
        state = self._state
        if _forks != self._forks and state is not State.NEW:
            raise WrongEventLoop(
                f"{name} was started by the process this one was forked from; its loop, tasks "
                "and connections belong to that process: start a client in this one"
            )
        if state is State.RUNNING or state is State.STARTING:
            self._check_loop(running_loop())
        if state is State.NEW:
            raise ClientNotStarted(f"{name} is not started (use 'async with' or 'await start()')")
        if state is State.STARTING:
            raise ClientNotStarted(f"{name} is still starting")
        error = ClientClosed(f"{name} is stopped" + (f": {self._error!r}" if self._error else ""))
        raise error from self._error

    def _check_loop(self, loop: Any) -> None:
        if loop is not self._loop:
            raise WrongEventLoop(
                f"{self._describe()} was started on another event loop; a client, its tasks "
                "and its connections belong to the loop that started it"
            )

    def _time_left(self) -> float:
        """Seconds left before the stop deadline (infinite until a stop was asked for)."""
        return max(0.0, self._deadline - anyio.current_time())

    # ---- start ---------------------------------------------------------------------------

    async def start(self) -> None:
        """Start the client and return once it is ready; idempotent (a second call, from any
        task, waits for the same start). Raises a :class:`RocketMQError` if it cannot start
        (or the ``KeyboardInterrupt`` / ``SystemExit`` an actor stopped it with)."""
        await self._started()
        if not self.running:  # stopped (or failed) right after it started
            if self._error is not None and not isinstance(self._error, Exception):
                raise self._error
            self._raise_not_running()

    async def _started(self) -> None:
        """Start, or join a start under way; raise what made the start fail."""
        loop = running_loop()
        if self._state is State.RUNNING:
            self._check_loop(loop)
            return
        if self._state is State.STARTING:
            self._check_loop(loop)
        elif self._state is State.NEW:
            self._launch(loop)
        else:
            self._raise_not_running()
        assert self._ready is not None
        try:
            await self._ready.wait()
        except anyio.get_cancelled_exc_class():
            # the caller gave up: stop what was started (bounded), then let the cancellation go
            with anyio.CancelScope(shield=True):
                await self._stop_and_wait()
            raise
        if self._start_error is not None:
            raise self._start_error

    def _launch(self, loop: Any) -> None:
        self._loop = loop
        self._owner = loop if isinstance(getattr(loop, "_thread_id", None), int) else None
        self._forks = _forks
        self._state = State.STARTING
        self._ready = anyio.Event()
        self._done = anyio.Event()
        self._stop_event = anyio.Event()
        self._host = spawn_host(loop, self._host_main, name=f"rocketmq-actors:{self._describe()}",
                                on_error=self._host_escaped)  # fmt: skip

    def _host_escaped(self, exc: BaseException) -> None:
        """What a trio host raised (a system task may not raise): already the client's error,
        logged and delivered."""
        log.debug("client.host_ended", client=self._describe(), error=repr(exc))

    async def _host_main(self) -> None:
        _inside.set(self)  # (the task's own context: its actors inherit it)
        assert self._stop_event is not None
        stop_event = self._stop_event
        escaped: BaseException | None = None
        try:
            with anyio.CancelScope() as self._hard:
                if self._stop_event.is_set():  # asked to stop before the host ran
                    self._hard.deadline = self._deadline
                async with AsyncExitStack() as stack:
                    try:
                        await self._open(stack)
                        if not stop_event.is_set():
                            self._state = State.RUNNING
                            self._resolve_start(None)
                            log.info("client.started", client=self._describe())
                            await stop_event.wait()
                        self._state = State.STOPPING
                        await self._closing()
                    finally:
                        self._begin_stop()  # however the run ends, unwinding is bounded
        except BaseException as exc:
            escaped = self._record(exc)
        finally:
            self._hard = None
            self._state = State.STOPPED
            if self._ready is not None and not self._ready.is_set():
                if self._start_error is None:  # failed (an actor's error) or stopped meanwhile
                    self._start_error = self._error or ClientClosed(
                        f"{self._describe()} stopped while starting"
                    )
                self._resolve_start(self._start_error)
            log.info("client.stopped", client=self._describe(),
                     error=repr(self._error) if self._error else None)  # fmt: skip
            for callback in list(self._on_stopped.values()):
                try:
                    callback(self._error)
                except Exception:
                    log.exception("client.link_failed", client=self._describe())
            self._on_stopped.clear()
            assert self._done is not None
            self._done.set()
        if escaped is not None:
            raise escaped

    def _resolve_start(self, error: BaseException | None) -> None:
        self._start_error = error
        if self._ready is not None and not self._ready.is_set():
            self._ready.set()

    def _record(self, exc: BaseException) -> BaseException | None:
        """What ended the host: a failed start, a failure while running, or the host task
        cancelled from outside. Returns what the host task must raise itself."""
        leaf = unwrap_group(exc)
        if self._ready is not None and not self._ready.is_set():  # _open failed
            if self._error is not None:  # an actor failed it first (_fail)
                self._start_error = self._error
            elif isinstance(leaf, RocketMQError):
                self._start_error = leaf
            else:
                self._start_error = StartupFailed(f"{self._describe()} could not start: {leaf!r}")
                self._start_error.__cause__ = leaf
            self._error = self._start_error
            if not isinstance(leaf, Exception):
                return leaf  # cancelled from outside, KeyboardInterrupt ...: the task's own
            return None
        if isinstance(leaf, anyio.get_cancelled_exc_class()):
            return exc  # the host task itself was cancelled (the loop is closing)
        self._set_error(leaf)
        delivered = self._interrupt_body()
        if isinstance(leaf, Exception):
            return None
        # KeyboardInterrupt / SystemExit: delivered by ``async with``, else raised by the task
        return None if delivered else leaf

    def _set_error(self, leaf: BaseException) -> None:
        if self._error is not None:
            return
        if isinstance(leaf, RocketMQError | KeyboardInterrupt | SystemExit):
            self._error = leaf
        else:
            self._error = InternalError(f"{self._describe()} failed: {leaf!r}")
            self._error.__cause__ = leaf
        log.error("client.failed", client=self._describe(), error=repr(leaf),
                  exc_info=leaf if isinstance(leaf, Exception) else None)  # fmt: skip
        if self.on_error is not None:
            try:
                self.on_error(self._error)
            except Exception:
                log.exception("client.on_error_failed", client=self._describe())

    # ---- stop ----------------------------------------------------------------------------

    def _fail(self, error: BaseException) -> None:
        """Stop the client with ``error``: the application sees it (``async with`` raises
        it; calls after it raise :class:`ClientClosed` from it)."""
        self._set_error(error)
        self._request_stop()
        self._interrupt_body()

    def _begin_stop(self, timeout: float | None = None) -> None:
        """Fix the stop deadline (the first call wins, a shorter ``timeout`` may move it
        earlier) and bound the host by it."""
        budget = self.shutdown_timeout if timeout is None else min(timeout, self.shutdown_timeout)
        self._deadline = min(self._deadline, anyio.current_time() + budget)
        if self._hard is not None:
            self._hard.deadline = self._deadline

    def _request_stop(self, timeout: float | None = None) -> None:
        if self._state is State.NEW or self._state is State.STOPPED:
            return
        self._begin_stop(timeout)
        if self._stop_event is not None:
            self._stop_event.set()  # (a start under way finishes, or is cut at the deadline,
            # then stops gracefully: what it consumed meanwhile has offsets to persist)

    async def _stop_and_wait(self, timeout: float | None = None) -> None:
        """Ask the host to stop and wait for it, bounded (callers shield this)."""
        if self._state is State.NEW:
            self._state = State.STOPPED
            return
        done, host = self._done, self._host
        if done is None or host is None or done.is_set():
            return
        self._request_stop(timeout)
        with anyio.move_on_after(self._time_left() + STOP_GRACE):
            await done.wait()
        if not done.is_set():
            host.cancel()
            with anyio.move_on_after(STOP_GRACE):
                await done.wait()
            if not done.is_set():
                log.error("client.stop_abandoned", client=self._describe(),
                          timeout=self.shutdown_timeout)  # fmt: skip

    async def stop(self) -> None:
        """Stop the client (gracefully, within ``shutdown_timeout``) and wait for it;
        idempotent, from any task of the client's event loop. In a cancelled scope it still
        stops, then raises the cancellation. Called from one of the client's own actors (a
        handler), it asks for the stop and returns at once: it cannot wait for itself."""
        if self._state is not State.NEW:
            self._check_loop(running_loop())
        if _inside.get() is self:  # a handler (or another actor) stopping its own client
            self._request_stop()
            return
        with anyio.CancelScope(shield=True):
            await self._stop_and_wait()
        await anyio.lowlevel.checkpoint_if_cancelled()

    def _link(self, key: object, on_stopped: Callable[[BaseException | None], None]) -> None:
        """Call ``on_stopped(error)`` when this client stops (a member learns its shared
        instance is gone)."""
        self._on_stopped[key] = on_stopped

    def _unlink(self, key: object) -> None:
        self._on_stopped.pop(key, None)

    # ---- async with ----------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        if self._state is not State.NEW:
            if self._state is State.STOPPED:
                self._raise_not_running()
            raise ClientStateError(
                f"{self._describe()} is already started: use either 'async with' or "
                "start() / stop(), once"
            )
        await self._started()
        self._enter_body()
        if self._error is not None or not self.running:  # it failed right after it started
            self._interrupt_body()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        """``stop()``, from any task; the client's error if it failed meanwhile (.body)."""
        await self._exit_body(exc_type, exc, tb)
        return None
