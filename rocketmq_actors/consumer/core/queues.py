"""Queue actors: one per queue a push consumer owns, supervised and registered by queue.

A :class:`QueueActor` holds the queue's :class:`~.process_queue.ProcessQueue` and runs its pull
loop: long polling, flow control (the owner's limits), pulled messages into the process queue
and on to the consume service; in orderly mode it also runs the queue's consume loop. Its
supervisor restarts it after an unexpected error (the same actor and process queue: nothing
cached is lost); a pull that fails with a client or broker error is retried after a back-off
inside the loop. "Who owns queue X" is a registry lookup (:class:`QueueTable`), and one
queue's actor can be stopped, restarted or inspected alone.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import Any, Generic, Protocol, TypeVar

import anyio
from anyio.abc import TaskStatus

from rocketmq_actors.consumer.core.brokercalls import PullCounter, Puller, PullResult, PullStatus
from rocketmq_actors.consumer.core.lag import record_lag
from rocketmq_actors.consumer.core.offsets import OffsetStore
from rocketmq_actors.consumer.core.process_queue import ProcessQueue
from rocketmq_actors.consumer.core.suspension import Suspension
from rocketmq_actors.logs import get_logger
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.records import MessageExt
from rocketmq_actors.runtime.backoff import RestartPolicy
from rocketmq_actors.runtime.registry import Registry
from rocketmq_actors.runtime.supervisor import ChildSpec, DynamicSupervisor, Restart
from rocketmq_actors.runtime.tree import Node

__all__ = ["QUEUE_POLICY", "PerQueue", "QueueActor", "QueueOwner", "QueueTable"]

log = get_logger("rocketmq_actors.consumer")

#: a queue actor that keeps failing (a bug, not a broker: those are retried inside) is
#: restarted up to 5 times a minute, then the consumer stops with SupervisorGaveUp
QUEUE_POLICY = RestartPolicy(
    max_restarts=5, period=60.0, backoff_initial=0.5, backoff_max=10.0, escalate=True
)
#: after a failed pull, a push consumer's: the 5.3.3 Java push consumer takes
#: pullTimeDelayMillsWhenException from ClientConfig's default, which its constructor copies
#: over the field's own initial value (read from the 5.3.3 client's bytecode)
PULL_ERROR_DELAY = 1.0


class QueueOwner(Puller, Protocol):
    """What a queue actor needs from its consumer."""

    orderly: bool
    offsets: OffsetStore
    suspension: Suspension  # suspend() / resume(): no pull starts while suspended

    @property
    def locking(self) -> bool: ...
    def over_limits(self, pq: ProcessQueue) -> bool: ...
    def cache_room(self, pq: ProcessQueue) -> int: ...
    async def wait_flow(self) -> None: ...
    def offset_moved(self, queue: MessageQueue, next_offset: int) -> None: ...
    async def accept(self, pq: ProcessQueue, fresh: list[MessageExt]) -> None: ...
    def deserialize(self, messages: Sequence[MessageExt]) -> None: ...
    async def consume_orderly(self, pq: ProcessQueue) -> None: ...


class QueueActor:
    def __init__(
        self, owner: QueueOwner, queue: MessageQueue, offset: int, *, locked: bool
    ) -> None:
        self.owner = owner
        self.pq = ProcessQueue(queue, offset)
        if locked:
            self.pq.locked, self.pq.lock_time = True, time.monotonic()
        self._pull_scope: anyio.CancelScope | None = None
        self._stopped = False
        self._pulls = PullCounter(PULL_ERROR_DELAY)
        self._parked = False  # suspended, with no pull in flight

    @property
    def queue(self) -> MessageQueue:
        return self.pq.queue

    async def run(self, *, task_status: TaskStatus[QueueActor]) -> None:
        """The actor: pull until the queue is dropped (and, orderly, consume it in order)."""
        async with anyio.create_task_group() as tg:
            if self.owner.orderly:
                tg.start_soon(self.owner.consume_orderly, self.pq)
            task_status.started(self)
            if not self._stopped:
                with anyio.CancelScope() as self._pull_scope:
                    await self._pull_loop()

    def stop_pulling(self) -> None:
        """Pull no more (a release, or the consumer stopping); what is cached stays."""
        self._stopped = True
        if self._pull_scope is not None:
            self._pull_scope.cancel()
        self.pq.wake()

    async def _pull_loop(self) -> None:
        owner, pq = self.owner, self.pq
        while not pq.dropped:
            if owner.suspension.suspended:
                self._parked = True  # (no pull in flight: describe() says so)
                try:
                    await owner.suspension.park()
                finally:
                    self._parked = False
                continue
            if owner.over_limits(pq) or (owner.locking and not pq.locked):
                # flow control (or an orderly queue whose lock lapsed): wait, look again
                await owner.wait_flow()
                continue
            asked = owner.subscription(pq.queue.topic)  # (what the pull filters by)
            result = await self._pull()
            if result is None:
                continue
            pq.last_pull = time.monotonic()
            self._record_lag(result)
            if result.status is PullStatus.OFFSET_ILLEGAL:
                # out of range, or reset on the broker (5.x server-side reset): start over
                # there with a fresh process queue (Java drops the queue the same way)
                log.warning("consumer.offset_moved", queue=str(pq.queue),
                            offset=pq.next_offset, next=result.next_offset)  # fmt: skip
                owner.offset_moved(pq.queue, result.next_offset)
                await anyio.sleep_forever()  # until the move stops this actor and starts anew
                # (ending here would drop the queue before the move finds it: it would then
                # wait for the next rebalance round)
            pq.next_offset = result.next_offset
            if result.status is not PullStatus.FOUND:
                if pq.count == 0:  # nothing in flight: the queue is consumed up to here
                    owner.offsets.update(pq.queue, result.next_offset)
                continue
            messages = list(result.messages)
            if (latest := owner.subscription(pq.queue.topic)) is not asked:
                # subscribe() replaced the expression during the pull: its tags filter now
                messages = [m for m in messages if latest.matches(m)]
            owner.deserialize(messages)  # (a rejected body: marked poison)
            fresh = pq.put(messages)
            if fresh and not owner.orderly:
                await owner.accept(pq, fresh)

    async def _pull(self) -> PullResult | None:
        # compressed bodies inflate into the room the cache has left (asked only for a pull
        # that has some: brokercalls.decode_pull_off_loop)
        pq = self.pq
        return await self._pulls.pull(self.owner, pq.queue, pq.next_offset, self._room)

    def _room(self) -> int:
        return self.owner.cache_room(self.pq)

    def _record_lag(self, result: PullResult) -> None:
        record_lag(self.owner.group, self.owner.offsets, self.pq, result.max_offset)

    def describe(self) -> Node:
        pq = self.pq
        info: dict[str, object] = {"next_offset": pq.next_offset, "cached": pq.count}
        if self.owner.locking:
            info["locked"] = pq.locked
        if self._pulls.errors:
            info["pull_errors"] = self._pulls.errors
        if self._parked:
            info["suspended"] = True
        q = pq.queue
        return Node(name=f"queue[{q.topic}@{q.broker_name}:{q.queue_id}]", kind="queue",
                    info=info)  # fmt: skip


class PerQueue(Protocol):
    """An actor of one queue (a push consumer's :class:`QueueActor`, a pull consumer's
    fetcher)."""

    @property
    def queue(self) -> MessageQueue: ...
    async def run(self, *, task_status: TaskStatus[Any]) -> None: ...
    def describe(self) -> Node: ...


A = TypeVar("A", bound=PerQueue)


class QueueTable(Generic[A]):
    """The owned queues: a supervisor of per-queue actors and a registry of them by queue."""

    def __init__(self, name: str, *, shutdown_timeout: float, kind: str = "queue") -> None:
        self.supervisor = DynamicSupervisor(name, QUEUE_POLICY, shutdown_timeout=shutdown_timeout)
        self.registry: Registry[MessageQueue, A] = Registry()
        self.kind = kind

    def __iter__(self) -> Iterator[MessageQueue]:
        return iter(self.registry)

    def __len__(self) -> int:
        return len(self.registry)

    def __contains__(self, queue: object) -> bool:
        return isinstance(queue, MessageQueue) and self.registry.lookup(queue) is not None

    def lookup(self, queue: MessageQueue) -> A | None:
        return self.registry.lookup(queue)

    def actors(self) -> list[A]:
        return [a for q in self.registry if (a := self.registry.lookup(q)) is not None]

    async def start(self, actor: A) -> None:
        """Supervise ``actor`` (restarted after an unexpected error, dropped once it ends)."""
        queue = actor.queue
        self.registry.register(queue, actor)
        spec: ChildSpec[A] = ChildSpec(
            queue, actor.run, Restart.TRANSIENT, kind=self.kind,
            on_exit=lambda: self.registry.unregister(queue, actor),
        )  # fmt: skip
        try:
            await self.supervisor.start_child(spec)
        except BaseException:
            self.registry.unregister(queue, actor)
            raise

    async def stop(self, queue: MessageQueue) -> None:
        """Stop the queue's actor for good and wait until it is gone."""
        actor = self.registry.lookup(queue)
        if actor is not None:
            self.registry.unregister(queue, actor)
        await self.supervisor.stop_child(queue)

    def describe(self) -> Node:
        return self.supervisor.describe(kind="queue-supervisor")
