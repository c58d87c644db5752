"""A dynamic supervisor in the Erlang/OTP mould, on anyio task groups.

* Children are started with ``tg.start()`` semantics: :meth:`DynamicSupervisor.start_child`
  returns the value the child passes to ``task_status.started()``, so a caller blocks until the
  child is ready. A child that fails *before* it is ready fails the caller, and is not restarted.
* one_for_one: a child that exits is restarted on its own, per its :class:`Restart` policy -
  PERMANENT always, TRANSIENT only after an error, TEMPORARY never.
* Restart intensity: more than ``max_restarts`` restarts within ``period`` seconds and the
  supervisor gives up on the child: it drops it (``escalate=False``; a later start_child may start
  it afresh), or raises :class:`~rocketmq_actors.errors.SupervisorGaveUp` into its own task
  group, failing the supervisor and so its parent (``escalate=True``).
* Between restarts it waits a jittered exponential backoff (:func:`backoff_delay`).
* ``max_children`` bounds the live children.
* Closing is OTP's orderly shutdown: no more restarts; every child whose spec has a
  ``shutdown`` hook gets it called with its ready value (a graceful stop request) and up to
  ``shutdown_timeout`` seconds to exit; children without a hook, and any still running after
  the timeout, are cancelled.
"""

from __future__ import annotations

import enum
import random
import time
from collections import deque
from collections.abc import Callable, Coroutine, Hashable
from types import TracebackType
from typing import Any, Generic, TypeVar

import anyio
import attrs
from anyio.abc import TaskGroup, TaskStatus

from rocketmq_actors.errors import ClientClosed, RocketMQError, SupervisorGaveUp, unwrap_group
from rocketmq_actors.logs import get_logger

__all__ = [
    "ChildSpec",
    "DynamicSupervisor",
    "Restart",
    "RestartPolicy",
    "SupervisorFull",
    "backoff_delay",
]

T = TypeVar("T")
log = get_logger("rocketmq_actors.runtime")


class Restart(enum.Enum):
    PERMANENT = "permanent"
    TRANSIENT = "transient"
    TEMPORARY = "temporary"


class SupervisorFull(RocketMQError):
    """``max_children`` are already running."""


@attrs.frozen(kw_only=True)
class RestartPolicy:
    max_restarts: int = 5
    period: float = 10.0
    backoff_initial: float = 0.1
    backoff_max: float = 5.0
    escalate: bool = False


@attrs.frozen
class ChildSpec(Generic[T]):
    """``start`` is an anyio task function: it must call ``task_status.started(value)`` once it
    is ready, then run until it is done (return) or fails (raise)."""

    key: Hashable
    start: Callable[..., Coroutine[Any, Any, None]]
    restart: Restart = Restart.TRANSIENT
    shutdown: Callable[[T], None] | None = None
    on_exit: Callable[[], None] | None = None  # called once the child is gone for good


def backoff_delay(attempt: int, initial: float, maximum: float, rng: random.Random) -> float:
    """Delay before restart number ``attempt`` (0-based): ``initial * 2**attempt`` capped at
    ``maximum``, then jittered uniformly into its upper half so restarts of many children spread
    out but never come sooner than half the nominal delay."""
    nominal = min(maximum, initial * (2 ** min(attempt, 30)))
    return rng.uniform(nominal / 2, nominal)


@attrs.define
class _Child:
    key: Hashable
    scope: anyio.CancelScope
    spec: ChildSpec[Any]
    value: Any = None
    restarts: int = 0
    last_backoff: float = 0.0
    running: bool = False


@attrs.frozen
class SupervisorStatistics:
    name: str
    children: int
    restarts: int
    given_up: int
    backoffs: tuple[float, ...]


class DynamicSupervisor:
    """Supervises children started at run time. Use as ``async with``."""

    def __init__(
        self,
        name: str,
        policy: RestartPolicy | None = None,
        *,
        max_children: int | None = None,
        shutdown_timeout: float = 5.0,
        rng: random.Random | None = None,
    ) -> None:
        self.name = name
        self.policy = policy or RestartPolicy()
        self.max_children = max_children
        self.shutdown_timeout = shutdown_timeout
        self._rng = rng or random.Random()
        self._children: dict[Hashable, _Child] = {}
        self._tg: TaskGroup | None = None
        self._restarts = 0
        self._given_up = 0
        self._backoffs: deque[float] = deque(maxlen=32)
        self._closing = False
        self._idle = anyio.Event()
        self._idle.set()

    async def __aenter__(self) -> DynamicSupervisor:
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._tg is not None
        self._closing = True
        graceful = False
        for child in list(self._children.values()):
            hook = child.spec.shutdown
            if exc_type is None and hook is not None and child.value is not None:
                hook(child.value)  # ask it to stop...
                graceful = True
            else:
                child.scope.cancel()  # ...or, with nothing to ask, stop it now
        if graceful:
            with anyio.move_on_after(self.shutdown_timeout) as waited:
                await self._idle.wait()
            if waited.cancelled_caught:
                log.warning("supervisor.shutdown.timeout", supervisor=self.name,
                            children=[str(k) for k in self._children])  # fmt: skip
        for child in list(self._children.values()):
            child.scope.cancel()
        try:
            return await self._tg.__aexit__(exc_type, exc, tb)
        finally:
            self._tg = None

    def statistics(self) -> SupervisorStatistics:
        return SupervisorStatistics(
            name=self.name,
            children=len(self._children),
            restarts=self._restarts,
            given_up=self._given_up,
            backoffs=tuple(self._backoffs),
        )

    async def wait_idle(self) -> None:
        """Return once no child is supervised (every child exited or was given up)."""
        while self._children:
            await self._idle.wait()

    def has_child(self, key: Hashable) -> bool:
        return key in self._children

    async def start_child(self, spec: ChildSpec[T]) -> T:
        """Start ``spec`` and return the value it reports once ready."""
        if self._tg is None or self._closing:
            raise ClientClosed(f"supervisor {self.name} is not running")
        if spec.key in self._children:
            raise KeyError(f"{self.name}: a child {spec.key!r} is already supervised")
        if self.max_children is not None and len(self._children) >= self.max_children:
            raise SupervisorFull(f"{self.name}: {self.max_children} children already running")
        value: T = await self._tg.start(self._supervise, spec)
        return value

    def terminate_child(self, key: Hashable) -> None:
        """Stop a child for good (no restart)."""
        child = self._children.get(key)
        if child is not None:
            child.scope.cancel()

    async def _supervise(self, spec: ChildSpec[Any], *, task_status: TaskStatus[Any]) -> None:
        policy = self.policy
        child = _Child(key=spec.key, scope=anyio.CancelScope(), spec=spec)
        self._children[spec.key] = child
        self._idle = anyio.Event()
        recent: deque[float] = deque()
        attempt = 0
        ready = False
        try:
            with child.scope:
                while True:
                    started_at = time.monotonic()
                    error: BaseException | None = None
                    try:
                        async with anyio.create_task_group() as tg:
                            child.value = await tg.start(spec.start)
                            child.running = True
                            if not ready:
                                ready = True
                                task_status.started(child.value)
                            else:
                                log.info("supervisor.child.restarted", supervisor=self.name,
                                         child=str(spec.key), restarts=child.restarts)  # fmt: skip
                    except Exception as exc:
                        if not ready:  # the first start failed: the caller's error
                            raise unwrap_group(exc) from None
                        error = unwrap_group(exc)
                    child.running = False
                    child.value = None
                    if (
                        self._closing
                        or spec.restart is Restart.TEMPORARY
                        or (spec.restart is Restart.TRANSIENT and error is None)
                    ):
                        return
                    now = time.monotonic()
                    if now - started_at > policy.period:
                        attempt = 0  # it ran well for a while: back to short delays
                    recent.append(now)
                    while recent and now - recent[0] > policy.period:
                        recent.popleft()
                    if len(recent) > policy.max_restarts:
                        self._given_up += 1
                        log.warning("supervisor.child.given_up", supervisor=self.name,
                                    child=str(spec.key), restarts=len(recent) - 1,
                                    error=repr(error), escalate=policy.escalate)  # fmt: skip
                        if policy.escalate:
                            raise SupervisorGaveUp(
                                self.name, spec.key, len(recent) - 1, policy.period
                            ) from error
                        return
                    delay = backoff_delay(
                        attempt, policy.backoff_initial, policy.backoff_max, self._rng
                    )
                    attempt += 1
                    child.restarts += 1
                    child.last_backoff = delay
                    self._restarts += 1
                    self._backoffs.append(delay)
                    log.info("supervisor.child.exited", supervisor=self.name, child=str(spec.key),
                             error=repr(error), backoff=round(delay, 3))  # fmt: skip
                    await anyio.sleep(delay)
        finally:
            self._children.pop(spec.key, None)
            if not self._children:
                self._idle.set()
            if spec.on_exit is not None:
                spec.on_exit()
