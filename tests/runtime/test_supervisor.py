from __future__ import annotations

import random

import anyio
import anyio.lowlevel
import attrs
import pytest
from anyio.abc import TaskStatus

from rocketmq_actors.errors import SupervisorGaveUp
from rocketmq_actors.runtime.supervisor import (
    ChildSpec,
    DynamicSupervisor,
    Restart,
    RestartPolicy,
    SupervisorFull,
    backoff_delay,
)

FAST = RestartPolicy(max_restarts=3, period=10.0, backoff_initial=0.001, backoff_max=0.004)


class Script:
    """A child whose runs follow a script: 'crash', 'exit', 'fail-start' or 'run' (forever)."""

    def __init__(self, *steps: str) -> None:
        self.steps = list(steps)
        self.starts = 0
        self.ran = anyio.Event()
        self.done = anyio.Event()
        self._started = anyio.Event()

    async def wait_starts(self, count: int) -> None:
        while self.starts < count:
            await self._started.wait()

    async def __call__(self, *, task_status: TaskStatus[int]) -> None:
        self.starts += 1
        self._started.set()
        self._started = anyio.Event()
        step = self.steps.pop(0) if self.steps else "run"
        if step == "fail-start":
            raise OSError("cannot start")
        task_status.started(self.starts)
        self.ran.set()
        if step == "crash":
            raise RuntimeError(f"crash #{self.starts}")
        if step == "exit":
            return
        try:
            await anyio.sleep_forever()
        finally:
            self.done.set()


async def test_start_returns_the_ready_value() -> None:
    child = Script("run")
    async with DynamicSupervisor("t", FAST) as sup:
        assert await sup.start_child(ChildSpec("a", child)) == 1
        assert sup.has_child("a")
        sup.terminate_child("a")
        await child.done.wait()


async def test_first_start_failure_goes_to_the_caller_and_is_not_restarted() -> None:
    child = Script("fail-start")
    async with DynamicSupervisor("t", FAST) as sup:
        with pytest.raises(OSError, match="cannot start"):
            await sup.start_child(ChildSpec("a", child, Restart.PERMANENT))
        assert not sup.has_child("a") and child.starts == 1


async def test_transient_child_restarts_after_crash_with_backoff() -> None:
    child = Script("crash", "crash", "run")
    async with DynamicSupervisor("t", FAST) as sup:
        await sup.start_child(ChildSpec("a", child, Restart.TRANSIENT))
        with anyio.fail_after(5):
            await child.wait_starts(3)
        stats = sup.statistics()
        assert stats.restarts == 2 and stats.given_up == 0
        assert all(0.0005 <= b <= 0.004 for b in stats.backoffs)
        sup.terminate_child("a")


async def test_an_exit_named_at_once_restarts_without_a_backoff_and_still_counts() -> None:
    slow = RestartPolicy(max_restarts=3, period=60.0, backoff_initial=30.0, backoff_max=60.0)
    child = Script(*["crash"] * 10)
    async with DynamicSupervisor("t", slow) as sup:
        await sup.start_child(ChildSpec("a", child, at_once=(RuntimeError,)))
        with anyio.fail_after(5):  # (a backoff would take 30 s)
            await sup.wait_idle()
        stats = sup.statistics()
    assert child.starts == slow.max_restarts + 1 and stats.given_up == 1
    assert stats.backoffs == (0.0, 0.0, 0.0)


async def test_transient_child_that_exits_normally_is_not_restarted() -> None:
    child = Script("exit")
    async with DynamicSupervisor("t", FAST) as sup:
        await sup.start_child(ChildSpec("a", child, Restart.TRANSIENT))
        await sup.wait_idle()
        assert child.starts == 1 and sup.statistics().restarts == 0


async def test_permanent_child_is_restarted_even_after_normal_exit() -> None:
    child = Script("exit", "exit", "run")
    async with DynamicSupervisor("t", FAST) as sup:
        await sup.start_child(ChildSpec("a", child, Restart.PERMANENT))
        with anyio.fail_after(5):
            await child.wait_starts(3)
        assert sup.has_child("a")
        sup.terminate_child("a")


async def test_temporary_child_is_never_restarted() -> None:
    child = Script("crash")
    async with DynamicSupervisor("t", FAST) as sup:
        await sup.start_child(ChildSpec("a", child, Restart.TEMPORARY))
        await sup.wait_idle()
        assert child.starts == 1


async def test_intensity_exceeded_drops_the_child() -> None:
    child = Script(*["crash"] * 10)
    async with DynamicSupervisor("t", FAST) as sup:
        await sup.start_child(ChildSpec("a", child))
        await sup.wait_idle()
        stats = sup.statistics()
    # 1 start + max_restarts restarts, then given up at the next crash
    assert child.starts == FAST.max_restarts + 1
    assert stats.given_up == 1


async def test_restart_failures_count_toward_intensity() -> None:
    child = Script("crash", *["fail-start"] * 10)
    async with DynamicSupervisor("t", FAST) as sup:
        await sup.start_child(ChildSpec("a", child))
        await sup.wait_idle()
    assert child.starts == FAST.max_restarts + 1


async def test_intensity_exceeded_escalates_when_asked() -> None:
    policy = RestartPolicy(max_restarts=2, period=10.0, backoff_initial=0.001, escalate=True)
    child = Script(*["crash"] * 10)
    with pytest.raises(BaseExceptionGroup) as info:
        async with DynamicSupervisor("conn", policy) as sup:
            await sup.start_child(ChildSpec("broker:1", child))
            await anyio.sleep_forever()
    gave_up = info.value.exceptions[0]
    assert isinstance(gave_up, SupervisorGaveUp) and gave_up.key == "broker:1"
    assert isinstance(gave_up.__cause__, RuntimeError)  # the last crash


async def test_max_children() -> None:
    async with DynamicSupervisor("t", FAST, max_children=1) as sup:
        await sup.start_child(ChildSpec("a", Script("run")))
        with pytest.raises(SupervisorFull):
            await sup.start_child(ChildSpec("b", Script("run")))
        with pytest.raises(KeyError):
            await sup.start_child(ChildSpec("a", Script("run")))
        sup.terminate_child("a")


async def test_shutdown_cancels_children_and_runs_their_cleanup() -> None:
    children = [Script("run") for _ in range(3)]
    async with DynamicSupervisor("t", FAST) as sup:
        for i, child in enumerate(children):
            await sup.start_child(ChildSpec(i, child))
    assert all(child.done.is_set() for child in children)
    assert sup.statistics().children == 0


async def test_orderly_shutdown_asks_first_then_cancels() -> None:
    """A child with a shutdown hook stops gracefully; one without is cancelled after the
    timeout."""
    outcomes: dict[str, str] = {}

    async def polite(*, task_status: TaskStatus[anyio.Event]) -> None:
        stop = anyio.Event()
        task_status.started(stop)
        try:
            await stop.wait()
            outcomes["polite"] = "stopped gracefully"
        except anyio.get_cancelled_exc_class():
            outcomes["polite"] = "cancelled"
            raise

    async def deaf(*, task_status: TaskStatus[None]) -> None:
        task_status.started()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            outcomes["deaf"] = "cancelled"
            raise

    with anyio.fail_after(5):
        async with DynamicSupervisor("t", FAST, shutdown_timeout=0.05) as sup:
            await sup.start_child(
                ChildSpec("p", polite, Restart.PERMANENT, shutdown=lambda stop: stop.set())
            )
            await sup.start_child(ChildSpec("d", deaf, Restart.PERMANENT))
    assert outcomes == {"polite": "stopped gracefully", "deaf": "cancelled"}
    assert sup.statistics().restarts == 0  # nothing restarted during shutdown


def test_backoff_grows_exponentially_with_jitter() -> None:
    rng = random.Random(7)
    delays = [[backoff_delay(n, 0.1, 5.0, rng) for _ in range(200)] for n in range(8)]
    for n, samples in enumerate(delays):
        nominal = min(5.0, 0.1 * 2**n)
        assert all(nominal / 2 <= d <= nominal for d in samples)
        assert len({round(d, 6) for d in samples}) > 150  # jittered, not constant
    means = [sum(s) / len(s) for s in delays]
    assert means[:6] == sorted(means[:6])  # grows until the cap
    assert max(delays[7]) <= 5.0  # capped


async def test_exit_child_restarts_it_as_if_it_had_raised_and_describe_shows_it() -> None:
    child = Script("run", "run")
    async with DynamicSupervisor("t", FAST) as sup:
        await sup.start_child(ChildSpec("a", child, Restart.TRANSIENT, kind="worker"))
        assert sup.exit_child("a", RuntimeError("injected"))
        with anyio.fail_after(5):
            await sup.wait_running("a", restarts=1)
        (node,) = sup.describe().children
        assert (node.name, node.kind, node.restarts, node.state) == ("a", "worker", 1, "running")
        assert node.last_error == "RuntimeError('injected')"
        assert not sup.exit_child("nobody", RuntimeError())
        sup.terminate_child("a")


async def test_exit_child_past_the_intensity_escalates_with_the_injected_cause() -> None:
    policy = attrs.evolve(FAST, max_restarts=1, escalate=True)
    child = Script()
    with pytest.raises(BaseExceptionGroup) as info:
        async with DynamicSupervisor("t", policy) as sup:
            await sup.start_child(ChildSpec("a", child, Restart.PERMANENT))
            for restarts in range(1, 3):
                sup.exit_child("a", RuntimeError(f"injected {restarts}"))
                if restarts == 1:
                    await sup.wait_running("a", restarts=1)
            await anyio.sleep_forever()
    gave_up = info.value.exceptions[0]
    assert isinstance(gave_up, SupervisorGaveUp) and gave_up.key == "a"
    assert str(gave_up.__cause__) == "injected 2"


async def test_stop_child_waits_until_the_key_is_free_again() -> None:
    async with DynamicSupervisor("t", FAST) as sup:
        first, second = Script("run"), Script("run")
        await sup.start_child(ChildSpec("a", first))
        await sup.stop_child("a")
        assert not sup.has_child("a") and first.done.is_set()
        assert await sup.start_child(ChildSpec("a", second)) == 1  # the same key, at once
        sup.terminate_child("a")


async def test_a_restarting_child_is_told_apart_from_one_starting() -> None:
    gate = anyio.Event()

    async def slow_restart(*, task_status: TaskStatus[None]) -> None:
        if slow_restart.runs:  # type: ignore[attr-defined]
            await gate.wait()
        slow_restart.runs += 1  # type: ignore[attr-defined]
        task_status.started()
        await anyio.sleep_forever()

    slow_restart.runs = 0  # type: ignore[attr-defined]
    async with DynamicSupervisor("t", FAST) as sup:
        await sup.start_child(ChildSpec("a", slow_restart))
        assert not sup.is_restarting("a")
        sup.exit_child("a", OSError("dropped"))
        with anyio.fail_after(5):
            while not sup.is_restarting("a"):
                await sup._changed.wait()
        gate.set()
        await sup.wait_running("a", restarts=1)
        assert not sup.is_restarting("a")
        sup.terminate_child("a")
