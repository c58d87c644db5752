"""The lifecycle every client shares: start/stop from any task, ``async with``, cancellation,
typed start-up errors, bounded stops. No broker: a small actor with a task group stands in."""

from __future__ import annotations

import asyncio
import gc
import importlib.metadata
import os
import re
import threading
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
import pytest
from packaging.version import Version

from rocketmq_actors.errors import (
    ClientClosed,
    ClientNotStarted,
    ClientStateError,
    InternalError,
    NameServerUnavailable,
    RocketMQError,
    StartupFailed,
    WrongEventLoop,
)
from rocketmq_actors.runtime.lifecycle import Lifecycle, State
from tests.conftest import BACKEND
from tests.slack import slack

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def _asyncio_only(what: str) -> None:
    """Skip, visibly, a test of asyncio's own machinery when make test's trio stage runs
    these tests (tests/conftest.py)."""
    if BACKEND != "asyncio":
        pytest.skip(f"{what}: asyncio only")


def test_the_anyio_these_tests_run_on() -> None:
    """``make oldest-anyio`` runs the lifecycle tests again on the oldest anyio we allow; the
    run must really use it (and a normal run an anyio at or above that floor)."""
    installed = Version(importlib.metadata.version("anyio"))
    match = re.search(r'"anyio>=([0-9.]+)"', PYPROJECT.read_text())
    assert match is not None
    floor = Version(match.group(1))
    expected = os.environ.get("ROCKETMQ_ACTORS_EXPECT_ANYIO")
    if expected is not None:
        assert installed == Version(expected) == floor
    else:
        assert installed >= floor


async def test_the_backend_these_tests_run_on() -> None:
    """make test's trio stage runs these tests again on trio (tests/conftest.py): it must."""
    import sniffio

    assert sniffio.current_async_library() == BACKEND


class _Actor(Lifecycle):
    """Holds a task group with a child open while it runs, as every client does."""

    def __init__(
        self,
        *,
        fail_open: BaseException | None = None,
        child_fails: BaseException | None = None,
        closing: str = "quick",
        shutdown_timeout: float = 2.0,
    ) -> None:
        super().__init__(shutdown_timeout=shutdown_timeout)
        self.fail_open = fail_open
        self.child_fails = child_fails
        self.closing_mode = closing
        self.fail_now = anyio.Event()
        self.opened = anyio.Event()
        self.unwound = False
        self.closed_gracefully = False
        self.child_cancelled = False

    async def _open(self, stack: AsyncExitStack) -> None:
        stack.callback(setattr, self, "unwound", True)
        tg = await stack.enter_async_context(anyio.create_task_group())
        stack.callback(tg.cancel_scope.cancel)

        async def child() -> None:
            try:
                await self.fail_now.wait()
                assert self.child_fails is not None
                raise self.child_fails
            except anyio.get_cancelled_exc_class():
                self.child_cancelled = True
                raise

        tg.start_soon(child)
        self.opened.set()
        if self.fail_open is not None:
            raise self.fail_open

    async def _closing(self) -> None:
        if self.closing_mode == "hang":
            await anyio.sleep_forever()
        elif self.closing_mode == "deaf":  # ignores cancellation: must be abandoned
            with anyio.CancelScope(shield=True):
                await anyio.sleep(30)
        self.closed_gracefully = True

    async def call(self) -> str:
        self._check_running()
        return "ok"


async def test_start_in_one_task_stop_in_another() -> None:
    actor = _Actor()
    async with anyio.create_task_group() as tg:
        tg.start_soon(actor.start)
    assert actor.running  # the task that started it is gone: it still runs
    assert await actor.call() == "ok"

    async def stopper() -> None:
        await actor.stop()

    async with anyio.create_task_group() as tg:
        tg.start_soon(stopper)
    assert actor.state is State.STOPPED
    assert actor.closed_gracefully and actor.unwound and actor.child_cancelled


async def test_start_and_stop_are_idempotent_from_many_tasks() -> None:
    actor = _Actor()
    async with anyio.create_task_group() as tg:
        for _ in range(5):
            tg.start_soon(actor.start)
    assert actor.running
    async with anyio.create_task_group() as tg:
        for _ in range(5):
            tg.start_soon(actor.stop)
    await actor.stop()
    assert actor.state is State.STOPPED


async def test_use_before_start_after_stop_and_restart_are_typed_errors() -> None:
    actor = _Actor()
    with pytest.raises(ClientNotStarted, match="not started"):
        await actor.call()
    await actor.start()
    await actor.stop()
    with pytest.raises(ClientClosed, match="stopped"):
        await actor.call()
    with pytest.raises(ClientClosed):
        await actor.start()
    with pytest.raises(ClientClosed):
        async with actor:
            pass
    never_started = _Actor()
    await never_started.stop()  # nothing to stop: fine
    assert never_started.state is State.STOPPED


async def test_async_with_on_a_started_client_is_refused() -> None:
    actor = _Actor()
    await actor.start()
    with pytest.raises(ClientStateError, match="already started"):
        async with actor:
            pass
    await actor.stop()


def test_a_second_event_loop_gets_a_typed_error() -> None:
    actor = _Actor()
    errors: list[BaseException] = []

    async def main() -> None:
        await actor.start()
        other = threading.Thread(target=lambda: asyncio.run(from_other_loop()))
        other.start()
        await anyio.to_thread.run_sync(other.join)
        await actor.stop()

    async def from_other_loop() -> None:
        for call in (actor.call, actor.start, actor.stop):
            try:
                await call()
            except BaseException as exc:
                errors.append(exc)

    asyncio.run(main())
    assert len(errors) == 3
    assert all(isinstance(e, WrongEventLoop) for e in errors), errors


def test_a_later_loop_in_the_same_thread_gets_a_typed_error() -> None:
    """The send path's check is by thread and by its loop running: a client left running on
    a loop that was stopped, used from a later loop of the same thread, is refused too."""
    actor = _Actor()
    first = asyncio.new_event_loop()
    try:
        first.run_until_complete(actor.start())
        assert actor.state is State.RUNNING

        async def from_later_loop() -> None:
            with pytest.raises(WrongEventLoop):
                actor._check_running()

        asyncio.run(from_later_loop())
        with pytest.raises(WrongEventLoop):  # no loop running in this thread now
            actor._check_running()

        async def from_its_loop() -> None:
            actor._check_running()  # its own loop, running again: allowed

        first.run_until_complete(from_its_loop())
        first.run_until_complete(actor.stop())
    finally:
        first.close()


def test_a_loop_moved_to_another_thread_is_followed() -> None:
    """The check asks which thread runs the client's loop now: a loop moved to another
    thread after the start is the client's there, and this thread's later loop is refused."""
    actor = _Actor()
    loop = asyncio.new_event_loop()
    loop.run_until_complete(actor.start())
    mover = threading.Thread(target=loop.run_forever)
    mover.start()
    try:

        async def from_this_thread() -> None:
            with pytest.raises(WrongEventLoop):
                actor._check_running()

        asyncio.run(from_this_thread())

        async def on_its_loop() -> str:
            actor._check_running()  # (no error: its own loop, in the other thread)
            return await actor.call()

        assert asyncio.run_coroutine_threadsafe(on_its_loop(), loop).result(10) == "ok"
        asyncio.run_coroutine_threadsafe(actor.stop(), loop).result(10)
    finally:
        loop.call_soon_threadsafe(loop.stop)
        mover.join(10)
        loop.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork on this platform")
def test_a_forked_child_gets_a_typed_error() -> None:
    """A child forked while a client runs must not write on its parent's connections."""
    actor = _Actor()

    async def main() -> None:
        await actor.start()
        pid = os.fork()
        if pid == 0:  # the child: exit 0 only if the client refuses it
            code = 1
            try:

                async def from_child() -> None:
                    actor._check_running()

                asyncio.run(from_child())
            except WrongEventLoop:
                code = 0
            except BaseException:
                code = 2
            finally:
                os._exit(code)
        _, status = await anyio.to_thread.run_sync(os.waitpid, pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        actor._check_running()  # the parent goes on
        await actor.stop()

    asyncio.run(main())


async def test_the_body_exception_leaves_unchanged_with_its_cause() -> None:
    cause = OSError("root cause")
    actor = _Actor()
    with pytest.raises(ValueError, match="from the body") as info:
        async with actor:
            raise ValueError("from the body") from cause
    assert type(info.value) is ValueError  # not an ExceptionGroup
    assert info.value.__cause__ is cause
    assert actor.closed_gracefully  # a failing body still gets the graceful stop


def _chain_has_no_cycle(exc: BaseException) -> bool:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None:
        if id(current) in seen:
            return False
        seen.add(id(current))
        current = current.__context__
    return True


@pytest.mark.parametrize("how", ["task group", "move_on_after"])
async def test_a_cancelled_scope_stops_the_client_gracefully_and_goes_on(how: str) -> None:
    """The reproducer of the lifecycle issue: a client in a task group that is cancelled.
    Before the fix anyio's task_done looped for ever on a self-referencing exception chain."""
    actor = _Actor()
    caught: list[BaseException] = []

    async def worker() -> None:
        try:
            async with actor:
                await anyio.sleep_forever()
        except BaseException as exc:
            caught.append(exc)
            raise

    with anyio.fail_after(5):
        if how == "task group":
            async with anyio.create_task_group() as tg:
                tg.start_soon(worker)
                await actor.opened.wait()
                await anyio.sleep(0.05)
                tg.cancel_scope.cancel()
        else:
            with anyio.move_on_after(0.2):
                await worker()
    assert actor.state is State.STOPPED and actor.closed_gracefully
    (exc,) = caught
    assert isinstance(exc, anyio.get_cancelled_exc_class())  # the cancellation, unchanged
    assert _chain_has_no_cycle(exc)


async def test_a_stop_that_hangs_is_cut_at_shutdown_timeout() -> None:
    actor = _Actor(closing="hang", shutdown_timeout=0.3)
    began = 0.0
    with anyio.fail_after(5), anyio.CancelScope() as scope:
        async with actor:
            began = time.monotonic()
            scope.cancel()
            await anyio.sleep_forever()
    took = time.monotonic() - began
    assert actor.state is State.STOPPED and not actor.closed_gracefully and actor.unwound
    assert 0.25 < took < 0.3 + slack(began), took


async def test_a_host_that_ignores_cancellation_is_abandoned_not_waited_for() -> None:
    actor = _Actor(closing="deaf", shutdown_timeout=0.2)
    await actor.start()
    began = time.monotonic()
    with anyio.fail_after(10):
        await actor.stop()  # shutdown_timeout + 2 x the grace, at most
    assert time.monotonic() - began < 0.2 + 2 * 1.0 + slack(began)


async def test_stop_in_a_cancelled_scope_still_stops_then_raises_the_cancellation() -> None:
    actor = _Actor()
    await actor.start()
    with anyio.CancelScope() as scope:
        scope.cancel()
        await actor.stop()
        pytest.fail("stop() returned in a cancelled scope")  # pragma: no cover
    assert scope.cancelled_caught
    assert actor.state is State.STOPPED and actor.closed_gracefully


async def test_a_client_that_fails_while_running_interrupts_the_body_with_a_typed_error() -> None:
    actor = _Actor(child_fails=KeyError("boom"))
    with anyio.fail_after(5), pytest.raises(InternalError, match="boom") as info:
        async with actor:
            actor.fail_now.set()
            await anyio.sleep_forever()  # interrupted
    assert isinstance(info.value.__cause__, BaseException)
    assert actor.error is info.value
    with pytest.raises(ClientClosed) as closed:
        await actor.call()
    assert closed.value.__cause__ is info.value


async def test_a_rocketmq_error_of_a_child_comes_out_as_itself() -> None:
    error = NameServerUnavailable("gone")
    actor = _Actor(child_fails=error)
    with anyio.fail_after(5), pytest.raises(NameServerUnavailable) as info:
        async with actor:
            actor.fail_now.set()
            await anyio.sleep_forever()
    assert info.value is error


async def test_fail_with_keyboard_interrupt_is_reraised_by_async_with() -> None:
    actor = _Actor()
    with anyio.fail_after(5), pytest.raises(KeyboardInterrupt):
        async with actor:
            actor._fail(KeyboardInterrupt())
            await anyio.sleep_forever()
    assert actor.state is State.STOPPED and actor.closed_gracefully


@pytest.mark.parametrize(
    ("error", "expected"),
    [(NameServerUnavailable("no NameServer answered"), NameServerUnavailable),
     (OSError("disk"), StartupFailed)],
)  # fmt: skip
async def test_a_failed_start_is_one_typed_error_and_unwinds(
    error: Exception, expected: type[RocketMQError]
) -> None:
    actor = _Actor(fail_open=error)
    with pytest.raises(expected) as info:
        async with actor:
            pytest.fail("the body ran")  # pragma: no cover
    assert isinstance(info.value, RocketMQError)  # caught by `except RocketMQError`
    assert not isinstance(info.value, BaseExceptionGroup)
    if expected is StartupFailed:
        assert info.value.__cause__ is error
    assert actor.unwound and actor.child_cancelled and actor.state is State.STOPPED


class _Slow(_Actor):
    """Never finishes opening."""

    async def _open(self, stack: AsyncExitStack) -> None:
        await super()._open(stack)
        await anyio.sleep_forever()


async def test_a_start_cancelled_by_its_caller_stops_what_was_started() -> None:
    actor = _Slow()
    with anyio.fail_after(5), anyio.move_on_after(0.1) as scope:
        await actor.start()
    assert scope.cancelled_caught
    assert actor.state is State.STOPPED and actor.unwound


async def test_a_stop_during_start_fails_the_start_with_client_closed() -> None:
    actor = _Slow()
    outcome: list[BaseException] = []

    async def starter() -> None:
        try:
            await actor.start()
        except RocketMQError as exc:
            outcome.append(exc)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(starter)
            await actor.opened.wait()
            await actor.stop()
    assert len(outcome) == 1 and isinstance(outcome[0], ClientClosed)
    assert actor.unwound


async def test_no_task_is_left_behind() -> None:
    _asyncio_only("counts asyncio's tasks (a trio host is a system task, ended with the run)")
    before = len(asyncio.all_tasks())
    for _ in range(3):
        async with _Actor():
            pass
    gc.collect()
    assert len(asyncio.all_tasks()) == before


@pytest.fixture
async def started_actor() -> AsyncIterator[_Actor]:
    """A fixture that yields a started client and stops it at teardown: pytest-asyncio runs
    the two halves in different tasks."""
    actor = _Actor()
    await actor.start()
    yield actor
    await actor.stop()
    assert actor.state is State.STOPPED


@pytest.mark.skipif(BACKEND != "asyncio", reason="an async fixture is pytest-asyncio's")
async def test_a_fixture_can_yield_a_started_client(started_actor: _Actor) -> None:
    assert await started_actor.call() == "ok"


async def test_a_stop_asked_from_inside_the_client_does_not_wait_for_itself() -> None:
    """A handler that stops its own consumer: it cannot wait for a stop that waits for it."""
    returned, go = anyio.Event(), anyio.Event()

    class Inner(_Actor):
        async def _open(self, stack: AsyncExitStack) -> None:
            await super()._open(stack)
            tg = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(tg.cancel_scope.cancel)

            async def stops_its_client() -> None:
                await go.wait()
                await self.stop()
                returned.set()
                await anyio.sleep_forever()  # until the stop cancels it

            tg.start_soon(stops_its_client)

    actor = Inner()
    with anyio.fail_after(2):
        await actor.start()
        go.set()
        await returned.wait()
        await actor.stop()
    assert actor.state is State.STOPPED and actor.closed_gracefully


async def test_a_daemon_started_with_start_hears_of_a_failure() -> None:
    """Without ``async with`` nothing interrupts the caller: ``on_error`` is called with the
    error, and ``wait_closed`` returns when the client stopped, raising it."""
    heard: list[BaseException] = []
    actor = _Actor(child_fails=KeyError("boom"))
    actor.on_error = heard.append
    await actor.start()
    actor.fail_now.set()
    with anyio.fail_after(5), pytest.raises(InternalError, match="boom"):
        await actor.wait_closed()
    assert heard == [actor.error]
    clean = _Actor()
    await clean.start()
    await clean.stop()
    await clean.wait_closed()  # a clean stop: returns, raises nothing


class _Unusual(BaseException):
    """A BaseException that is neither a cancellation, KeyboardInterrupt nor SystemExit."""


async def test_a_base_exception_no_body_takes_is_not_reported_as_never_retrieved() -> None:
    """Issue 43: a client started with ``start()`` (no ``async with`` body to interrupt) whose
    actor raises a BaseException: the error is the client's (typed, from ``wait_closed`` and
    every later call), and asyncio does not also print "Task exception was never retrieved"
    for the host task when it is collected."""
    _asyncio_only("asyncio's report of an unretrieved task exception")
    reported: list[dict[str, object]] = []
    asyncio.get_running_loop().set_exception_handler(lambda _, context: reported.append(context))
    actor = _Actor(child_fails=_Unusual("odd"))
    await actor.start()
    actor.fail_now.set()
    with anyio.fail_after(5), pytest.raises(InternalError, match="odd"):
        await actor.wait_closed()
    with pytest.raises(ClientClosed):
        await actor.call()
    actor._host = None
    del actor
    gc.collect()  # (asyncio reports an unretrieved task exception when the task is collected)
    assert not [c for c in reported if "never retrieved" in str(c["message"])], reported
