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
* Between restarts it waits a jittered exponential backoff (:func:`backoff_delay`), but for
  an exit its spec names ``at_once`` (restarted at once, still counted).
* ``max_children`` bounds the live children.
* Introspection: :meth:`DynamicSupervisor.describe` is the live subtree (each child's own
  :class:`~.tree.Node` when its ready value can describe itself, with its restarts and last
  error); :meth:`DynamicSupervisor.exit_child` makes a child exit with a given reason, as if
  it had raised it (OTP's ``exit/2``: the restart policy applies) - how tests inject faults
  and how an operator restarts one actor alone.
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

from .backoff import Backoff, RestartPolicy, backoff_delay
from .tree import Node

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


@attrs.frozen
class ChildSpec(Generic[T]):
    """``start`` is an anyio task function: it must call ``task_status.started(value)`` once it
    is ready, then run until it is done (return) or fails (raise). ``kind`` names what sort of
    actor it is in :meth:`DynamicSupervisor.describe`."""

    key: Hashable
    start: Callable[..., Coroutine[Any, Any, None]]
    restart: Restart = Restart.TRANSIENT
    shutdown: Callable[[T], None] | None = None
    on_exit: Callable[[], None] | None = None  # called once the child is gone for good
    kind: str = "child"
    expected: tuple[type[BaseException], ...] = ()  # exits logged without a traceback
    #: exits restarted without a backoff (they still count towards the restart limit): a
    #: child that ended itself to start afresh, such as a connection whose peer went silent
    at_once: tuple[type[BaseException], ...] = ()


@attrs.define
class _Child:
    key: Hashable
    scope: anyio.CancelScope
    spec: ChildSpec[Any]
    value: Any = None
    restarts: int = 0
    last_backoff: float = 0.0
    last_error: BaseException | None = None
    running: bool = False
    run_scope: anyio.CancelScope | None = None  # the current run's (exit_child cancels it)
    ever_ran: bool = False
    exit_reason: BaseException | None = None
    gone: anyio.Event = attrs.field(factory=anyio.Event)  # set once it is no longer supervised


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
        self._changed = anyio.Event()  # set (and replaced) whenever a child (re)starts or exits

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

    def _notify(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def wait_running(self, key: Hashable, restarts: int = 0) -> None:
        """Until the child ``key`` runs after at least ``restarts`` restarts (an operator, or a
        test that injected a fault, waits for the supervisor to have done its job)."""
        while True:
            child = self._children.get(key)
            if child is not None and child.running and child.restarts >= restarts:
                return
            await self._changed.wait()

    def is_restarting(self, key: Hashable) -> bool:
        """The child exited and waits for (or is in) its restart."""
        child = self._children.get(key)
        return child is not None and not child.running and child.restarts > 0

    def is_first_start(self, key: Hashable) -> bool:
        """The child is being started for the first time (it has never been ready)."""
        child = self._children.get(key)
        return child is not None and not child.ever_ran

    def child_value(self, key: Hashable) -> Any:
        """What a running child reported when it became ready (None while it restarts)."""
        child = self._children.get(key)
        return child.value if child is not None else None

    def exit_child(self, key: Hashable, reason: BaseException) -> bool:
        """Make the child exit as if it had raised ``reason``: it is restarted (or given up)
        per its policy. False if there is no such child running."""
        child = self._children.get(key)
        if child is None or child.run_scope is None:
            return False
        child.exit_reason = reason
        child.run_scope.cancel()
        return True

    def describe(self, *, kind: str = "supervisor") -> Node:
        """This supervisor and its children, as they are now."""
        children = []
        for child in list(self._children.values()):
            value = child.value
            described = getattr(value, "describe", None)
            node = described() if callable(described) else None
            if not isinstance(node, Node):
                node = Node(name=str(child.key), kind=child.spec.kind)
            children.append(
                attrs.evolve(
                    node,
                    state=node.state if child.running else "restarting",
                    restarts=child.restarts,
                    last_error=repr(child.last_error) if child.last_error else None,
                )
            )
        return Node(
            name=self.name, kind=kind, children=tuple(children),
            info={"given_up": self._given_up} if self._given_up else {},
        )  # fmt: skip

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
        """Stop a child for good (no restart); it is gone once its task has unwound."""
        child = self._children.get(key)
        if child is not None:
            child.scope.cancel()

    async def stop_child(self, key: Hashable) -> None:
        """Stop a child for good and wait until it is gone (its key may be used again)."""
        child = self._children.get(key)
        if child is not None:
            child.scope.cancel()
            await child.gone.wait()

    async def _supervise(self, spec: ChildSpec[Any], *, task_status: TaskStatus[Any]) -> None:
        policy = self.policy
        child = _Child(key=spec.key, scope=anyio.CancelScope(), spec=spec)
        self._children[spec.key] = child
        self._idle = anyio.Event()
        recent: deque[float] = deque()
        backoff: Backoff = policy.backoff(self._rng)
        ready = False
        try:
            with child.scope:
                while True:
                    started_at = time.monotonic()
                    error: BaseException | None = None
                    try:
                        async with anyio.create_task_group() as tg:
                            child.run_scope = tg.cancel_scope
                            child.value = await tg.start(spec.start)
                            child.running = child.ever_ran = True
                            self._notify()
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
                    child.run_scope = None
                    if child.exit_reason is not None:  # exit_child: as if it had raised it
                        error, child.exit_reason = child.exit_reason, None
                        if not ready:
                            raise error
                    child.running = False
                    child.value = None
                    if error is not None:
                        child.last_error = error
                    self._notify()
                    if (
                        self._closing
                        or spec.restart is Restart.TEMPORARY
                        or (spec.restart is Restart.TRANSIENT and error is None)
                    ):
                        return
                    now = time.monotonic()
                    if now - started_at > policy.period:
                        backoff.reset()  # it ran well for a while: back to short delays
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
                    delay = 0.0 if isinstance(error, spec.at_once) else backoff.next()
                    child.restarts += 1
                    child.last_backoff = delay
                    self._restarts += 1
                    self._backoffs.append(delay)
                    expected = isinstance(error, (RocketMQError, *spec.expected))
                    log.warning("supervisor.child.exited", supervisor=self.name,
                                child=str(spec.key), error=repr(error), backoff=round(delay, 3),
                                exc_info=None if expected else error)  # fmt: skip
                    await anyio.sleep(delay)
        finally:
            if self._children.get(spec.key) is child:
                del self._children[spec.key]
            child.gone.set()
            self._notify()
            if not self._children:
                self._idle.set()
            if spec.on_exit is not None:
                spec.on_exit()
