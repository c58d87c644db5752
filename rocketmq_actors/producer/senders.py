"""The senders actor: what ``submit`` and ``send_nowait`` admit, sent by a pool of tasks.

At most ``max_pending`` messages (and ``max_pending_bytes``) are admitted at once; past that,
``submit``'s admission waits (backpressure) and ``send_nowait``'s is refused. A plain
message's first attempt starts at once from the caller's task when its route and connection
are ready (``SendLoop.start_first``: the Java client's asynchronous send), and a SEND_OK
answer resolves its future from the connection. The rest goes on a work queue served by a
pool of sender tasks (a task per message costs more than the send itself; the pool grows
while every sender is busy, up to a bound, and starts small): route
lookups, connections, retries, ordered messages. Ordered messages (a sharding key or a
selector) form a lane per queue: each waits for the one before it, because a broker stores
one connection's concurrent sends to a queue in any order (5.x runs several send threads) -
as the Java client's synchronous ordered send does.

Every admitted message's future is resolved, whatever happens: with the broker's answer, with
the send's failure, with :class:`~rocketmq_actors.errors.InternalError` if the send hit a bug
(the other sends go on), or - once the producer stops - with a ``SendFailed`` whose
``outcome_unknown`` says whether the message had been written.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NoReturn, cast

import anyio
from anyio.abc import TaskGroup, TaskStatus

from rocketmq_actors.errors import (
    ClientClosed,
    ConfigError,
    InternalError,
    RocketMQError,
    SendFailed,
)
from rocketmq_actors.logs import get_logger
from rocketmq_actors.metrics import METRICS
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.runtime.signal import Signal
from rocketmq_actors.runtime.soon import Call
from rocketmq_actors.runtime.tree import Node
from rocketmq_actors.runtime.waiters import Waiter, set_results, wait_done, waiter_factory
from rocketmq_actors.runtime.workqueue import WorkQueue

from .autobatch import Batch, Batcher
from .ends import SendEnds, send_failure
from .future import FlushResult, flush_futures
from .prepare import Prepared
from .queued import Queued
from .result import SendResult
from .sendloop import ROUND_ROBIN, Routing, SendLoop

__all__ = ["SENDERS", "Senders"]

log = get_logger("rocketmq_actors.producer")

SENDERS = 256  # sender tasks at most (fewer if max_pending is lower)
#: sender tasks a producer starts with; more start while every one is busy, up to SENDERS (a
#: process of many idle producers holds few tasks each)
INITIAL_SENDERS = 2


class Senders:
    def __init__(
        self,
        loop: SendLoop,
        *,
        name: str,
        max_pending: int,
        max_pending_bytes: int,
        batcher: Batcher | None = None,
    ) -> None:
        self.loop = loop
        self._batcher = batcher
        self.name = name
        self.max_pending = max_pending
        self.max_pending_bytes = max_pending_bytes
        self.tasks = min(max_pending, SENDERS)
        self.pending = 0
        self.pending_bytes = 0
        self._changed = Signal()
        self._lanes: dict[MessageQueue, Waiter] = {}  # ordered sends: the last one per queue
        self._admitted = 0
        self._unresolved: dict[int, Queued] = {}  # admission seq -> item, until released
        self._batches: set[Batch] = set()  # auto-batches admitted and not released yet
        self._new_future: Callable[[], Waiter] | None = None  # (the running loop's, once known)
        self._ends = SendEnds(name)  # each send's callback, once it ends
        # (a batch holds one admitted message at least: room for every item, whatever they are)
        self.outbox: WorkQueue[Queued | Batch] = WorkQueue(max_pending)
        self._pool: TaskGroup | None = None
        self._started = 0  # sender tasks started

    # ---- admission --------------------------------------------------------------------

    def admit_now(
        self,
        prepared: Prepared,
        routing: Routing,
        timeout: float | None,
        callback: Call | None = None,
    ) -> Waiter | None:
        """The message admitted without waiting - its future - when there is room now and,
        for an ordered message, its queue is known without a lookup (a cached route); None,
        with nothing done: :meth:`admit` it (or refuse it: ``ProducerGroup.busy``). The common
        path of ``submit``, and all of ``send_nowait``, without a coroutine. A ``callback``
        that cannot be called is a :class:`ConfigError`, before anything is done."""
        if callback is not None and not callable(callback):
            raise ConfigError(f"callback must be callable, not {type(callback).__name__}")
        if not self.has_room(prepared.size):
            return None
        lane = None
        ordered = routing is not ROUND_ROBIN and routing.ordered
        if ordered:  # (its lane: the send before it to the same queue, if it is known now)
            route = self.loop._instance.routes.cached(prepared.topic)
            if route is None:
                return None
            lane = self.loop.lane_in(route, routing)
        if not ordered:
            joined = self._join_batch(prepared, timeout, callback)
            if joined is not None:
                return joined
        item = self._enter(prepared, routing, timeout, lane, callback)
        if ordered or not self.loop.start_first(item, timeout):
            self._queue_now(item)
        return item.future

    def join_plain(
        self,
        names: tuple[str, str],
        body: bytes,
        flag: int,
        timeout: float | None,
        callback: Call | None,
    ) -> Waiter | None:
        """:meth:`admit_now` for a plain message (``prepare.is_plain``, checked) of topic
        ``names`` (as sent, as the user named it) that auto-batching joins to a batch
        (``Batcher.add_plain``): its future; None, with nothing done, when there is no room or
        the message cannot join a batch (``admit`` it then)."""
        if callback is not None and not callable(callback):
            raise ConfigError(f"callback must be callable, not {type(callback).__name__}")
        size = len(body)
        batcher = self._batcher
        if batcher is None or not self.has_room(size):
            return None
        if not batcher.takes_plain(size):
            return None
        future = self._future()
        opened = batcher.add_plain(names, flag, body, future, timeout, callback)
        self._count_in(size)  # (once it joined: a join that failed counted nothing)
        if opened is not None:
            self._queue_now(opened)
        return future

    async def admit(
        self,
        prepared: Prepared,
        routing: Routing,
        timeout: float | None,
        check_running: Callable[[], None],
        *,
        callback: Call | None = None,
    ) -> Waiter:
        """Wait for room, then queue the message; its future is returned at once."""
        size = prepared.size
        ordered = routing is not ROUND_ROBIN and routing.ordered
        while True:
            while not self.has_room(size):
                await self.wait_change()
                check_running()  # stopped while it waited for room
            lane = await self.loop.lane_of(prepared.topic, routing) if ordered else None
            check_running()  # stopped during the route lookup
            if self.has_room(size):  # (others may have taken it during the lookup)
                break
        if not ordered:
            joined = self._join_batch(prepared, timeout, callback)
            if joined is not None:
                return joined
        item = self._enter(prepared, routing, timeout, lane, callback)
        if not ordered and self.loop.start_first(item, timeout):
            return item.future  # on its way, with no task: the Java client's asynchronous send
        try:
            await self.outbox.put(item)
        except BaseException as exc:  # cancelled, or the producer stopped: never admitted
            self._refuse(item, exc)
        self._grow()
        return item.future

    def _enter(
        self,
        prepared: Prepared,
        routing: Routing,
        timeout: float | None,
        lane: MessageQueue | None,
        callback: Call | None,
    ) -> Queued:
        """Count the message in (there is room) and make its future and queue item."""
        future = self._future()
        self._count_in(prepared.size)
        seq = self._admitted
        previous = None
        if lane is not None:  # ordered: after the previous send to the same queue completed
            previous = self._lanes.get(lane)
            self._lanes[lane] = future
        item = self._unresolved[seq] = Queued(
            self, future, prepared, routing, timeout, lane, previous, seq, callback
        )
        return item

    def _future(self) -> Waiter:
        """A new send's future (the running loop's kind)."""
        new_future = self._new_future
        if new_future is None:
            new_future = self._new_future = waiter_factory()[0]
        return new_future()

    def _count_in(self, size: int) -> None:
        """Count a message of ``size`` bytes in (there is room; its admission number is
        ``_admitted`` then)."""
        self.pending += 1
        self.pending_bytes += size
        self._admitted += 1

    def _join_batch(
        self, prepared: Prepared, timeout: float | None, callback: Call | None
    ) -> Waiter | None:
        """Auto-batching: count ``prepared`` in (there is room) and join it to its topic's open
        batch when it may - its future - else None, with nothing done (:mod:`.autobatch`). A
        batched message is held by its batch (its future, and its callback if it has one),
        whatever path prepared it."""
        batcher = self._batcher
        if batcher is None or not batcher.takes(prepared):
            return None
        future = self._future()
        opened = batcher.add(prepared, future, timeout, callback)
        self._count_in(prepared.size)  # (once it joined: a join that failed counted nothing)
        if opened is not None:
            self._queue_now(opened)
        return future

    def _queue_now(self, work: Queued | Batch) -> None:
        """Queue ``work`` (an admitted message, or the auto-batch it opened) for a sender
        now; if it cannot be (the producer stopped), refuse that message."""
        if work.__class__ is Batch:
            self._batches.add(work)
        error: BaseException
        try:
            placed = self.outbox.offer(work)
        except anyio.ClosedResourceError as exc:  # the producer stopped
            placed, error = False, exc
        else:  # (room for every admitted item: it is always taken)
            error = InternalError("the senders' queue had no room")
        if not placed:
            self._refuse(work, error)
        self._grow()

    def _refuse(self, work: Queued | Batch, exc: BaseException) -> NoReturn:
        """Undo the admission of a message that could not be queued (``work``: its item, or
        the auto-batch it opened, which nothing else joined), and raise why."""
        if work.__class__ is Batch:
            batch = work
            assert self._batcher is not None
            self._batcher.drop(batch)  # (its one message's: none joined it since)
            batch.callbacks = None  # (the caller gets the error)
            self.release_batch(batch, written=False)
            batch.futures[0].exception()  # (retrieved: no one else will read it)
        else:
            item = cast(Queued, work)
            item.callback = None
            self.release(item, written=False)
            item.future.exception()
            lane, previous = item.lane, item.previous
            if lane is not None and previous is not None and lane not in self._lanes:
                self._lanes[lane] = previous  # the next ordered send waits for that one again
        self._changed.set()  # its room is free again
        if isinstance(exc, anyio.ClosedResourceError):
            raise ClientClosed(f"{self.name} stopped before the send was admitted") from None
        raise exc

    def _first_done(self, item: Queued, outcome: SendResult | Exception | None) -> None:
        """The end of a send's first attempt started by ``start_first``: the send's result, or
        (None) the rest of the send handed to a sender task (retries), or a bug that fails it."""
        if outcome is None:
            item.first = True
            try:
                if self.outbox.offer(item):  # (room for every admitted item: always taken)
                    self._grow()
                    return
            except anyio.ClosedResourceError:  # the producer stopped: release() fails it
                pass
            self._changed.set()
            self.release(item, written=item.may_be_stored)
            return
        future = item.future
        try:
            if not future.done():  # (a caller cancelled while awaiting it: nothing to set)
                if outcome.__class__ is SendResult:
                    future.set_result(outcome)
                else:
                    future.set_exception(
                        send_failure(item.prepared.user_topic, cast(Exception, outcome))
                    )
        finally:  # (an event-backed future runs its callbacks in set_*: they may raise)
            self._changed.set()
            self.release(item, written=True)

    def has_room(self, size: int) -> bool:
        return self.pending < self.max_pending and (
            not self.pending or self.pending_bytes + size <= self.max_pending_bytes
        )

    async def flush(self, timeout: float | None) -> FlushResult:
        """Wait (at most ``timeout`` seconds; None: no limit) for the futures of the sends
        admitted so far, and count how they ended. Cancelling it cancels no send."""
        return await flush_futures(self.outstanding(), timeout)

    def outstanding(self) -> list[Waiter]:
        """The futures of every send admitted and not released yet (what ``flush`` waits
        for)."""
        futures = [item.future for item in self._unresolved.values()]
        for batch in self._batches:
            futures += batch.futures
        return futures

    def close_batches(self) -> None:
        """Let every open auto-batch leave now (a stop waits out no ``batch_max_delay``)."""
        if self._batcher is not None:
            self._batcher.close_all()

    def changed(self) -> None:
        """Wake what waits for room (or for the sends in flight, at a stop)."""
        self._changed.set()

    async def wait_change(self) -> None:
        await self._changed.wait()

    # ---- the actor --------------------------------------------------------------------

    async def run(self, *, task_status: TaskStatus[Senders]) -> None:
        """The pool of sender tasks (restarted whole by the producer's supervisor)."""
        try:
            async with anyio.create_task_group() as tg:
                self._pool, self._started = tg, 0
                for _ in range(min(self.tasks, INITIAL_SENDERS)):
                    self._started += 1
                    tg.start_soon(self._sender)
                self._grow()  # (items queued before a restart)
                task_status.started(self)
        finally:
            self._pool = None  # (its tasks are over: no more start there)

    def _grow(self) -> None:
        """One more sender task when an item was queued (the queue hands an item to a sender
        that waits for one: a queued item found none), up to the bound."""
        pool = self._pool
        if pool is not None and self._started < self.tasks and len(self.outbox):
            self._started += 1
            pool.start_soon(self._sender)

    async def _sender(self) -> None:
        """An ordered message waits for the one before it in its lane; that one was queued
        earlier, so another sender already holds it: no deadlock, whatever the number of
        senders (the pool grows while every sender is busy)."""
        outbox = self.outbox
        while True:
            try:
                item = await outbox.get()
            except anyio.EndOfStream:
                return
            if item.__class__ is Batch:
                await self._send_batch(item)
            else:
                await self._send_one(cast(Queued, item))
            del item  # (an idle sender holds nothing it sent: its messages are freed)

    async def _send_one(self, item: Queued) -> None:
        try:
            if item.previous is not None:
                await wait_done(item.previous)  # its own caller hears about a failure
            await self._send_into(item)
        except BaseException:  # cancelled: the producer is stopping
            self.release(item, written=True)
            raise
        self.release(item, written=True)  # (it is resolved: only its admission is released)

    async def _send_into(self, item: Queued) -> None:
        future, prepared = item.future, item.prepared
        # resolved only if not done: a caller cancelled while awaiting the future cancels it
        # (asyncio), and that must not fail this sender (nor the other sends)
        try:
            result = await self.loop.send(
                prepared, item.routing, item.timeout, item if item.first else None
            )
            if not future.done():
                future.set_result(result)
        except Exception as exc:  # a bug too: it fails this send, never the producer
            error = send_failure(prepared.user_topic, exc)
            if not future.done():
                future.set_exception(error)
        finally:
            self._changed.set()

    async def _send_batch(self, batch: Batch) -> None:
        """Send an auto-batch (once closed) and resolve each message's future with its own
        result, or every one with the batch's error; then release them."""
        assert self._batcher is not None
        futures, sent = batch.futures, False
        outcomes: list[SendResult] | RocketMQError
        try:
            await self._batcher.ready(batch)
            prepared = batch.prepared()
            sent = True
            result = await self.loop.send(prepared, ROUND_ROBIN, batch.timeout)
            outcomes = result.split(prepared.batch_ids)
            METRICS.inc("rocketmq_client_auto_batches_total", topic=batch.user_topic)
            METRICS.inc("rocketmq_client_auto_batched_total", len(futures),
                        topic=batch.user_topic)  # fmt: skip
        except Exception as exc:  # a bug too: it fails this batch, never the producer
            outcomes = send_failure(batch.user_topic, exc)
        except BaseException:  # cancelled: the producer is stopping
            self.release_batch(batch, written=sent)
            raise
        finally:
            self._batcher.done(batch)
            self._changed.set()
        resolved = False
        try:
            _resolve_all(futures, outcomes)
            resolved = True
        finally:  # (an event-backed future runs its callbacks in set_*: they may raise)
            self.release_batch(batch, written=True, resolved=resolved)

    def release(self, item: Queued, *, written: bool) -> None:
        """Release an item's admission; fail its future if it is not resolved yet (the
        producer stopped: ``written`` says whether the broker may have the message)."""
        if not item.future.done():  # (resolved, the common case: no call)
            self._fail_stopped(item.future, item.user_topic, written=written)
        self.pending -= 1
        self.pending_bytes -= item.size
        self._unresolved.pop(item.seq, None)
        if item.lane is not None and self._lanes.get(item.lane) is item.future:
            del self._lanes[item.lane]
        if item.callback is not None:
            self._ends.call_back(item)

    def release_batch(self, batch: Batch, *, written: bool, resolved: bool = False) -> None:
        """:meth:`release` for every message of an auto-batch (once): its admissions first,
        then its futures not resolved yet failed (the producer stopped; none is when the
        caller ``resolved`` them all), whatever their done callbacks do; its messages'
        callbacks are queued to run after that. It is closed by then: ``Batcher.ready`` closes
        it whatever happens, a stop closes every open one, and a refused one is dropped."""
        self.pending -= len(batch.futures)
        self.pending_bytes -= batch.admitted
        self._batches.discard(batch)
        callbacks, batch.callbacks = batch.callbacks, None
        try:
            if not resolved:
                self._fail_batch_stopped(batch, written=written)
        finally:
            if callbacks is not None:
                self._ends.call_back_all(batch.futures, callbacks)

    def _fail_batch_stopped(self, batch: Batch, *, written: bool) -> None:
        """:meth:`_fail_stopped` for each message of an auto-batch not resolved yet."""
        for future in batch.futures:
            if not future.done():  # (resolved, the common case: no call)
                self._fail_stopped(future, batch.user_topic, written=written)

    def _fail_stopped(self, future: Waiter, topic: str, *, written: bool) -> None:
        """Fail a send's future, not resolved yet, because the producer stopped."""
        error = ClientClosed(f"{self.name} stopped before the send completed")
        error.outcome_unknown = written
        future.set_exception(SendFailed(topic, [error]))

    def fail_unsent(self) -> None:
        """Once the sender tasks are gone: fail what they never took (it was never written),
        and the futures of first attempts still unanswered (written: a shared client
        instance's connection may stay open, and answer them later; they are released then)."""
        self.outbox.close()
        if self._batcher is not None:
            self._batcher.close_all()  # (a later message cannot join a batch no one sends)
        for item in self.outbox.take_all():  # (a first attempt's outcome may have been written)
            if item.__class__ is Batch:  # (an auto-batch no sender took: never written)
                assert self._batcher is not None
                self._batcher.done(item)
                self.release_batch(item, written=False)
                continue
            item = cast(Queued, item)
            self.release(item, written=item.first and item.may_be_stored)
        for unresolved in list(self._unresolved.values()):  # (batches: released above, or by
            if not unresolved.future.done():  # the sender that was sending each, as it ended)
                self._fail_stopped(unresolved.future, unresolved.user_topic, written=True)
                self._ends.call_back(unresolved)  # (a first attempt's may be released later)

    def describe(self) -> Node:
        info = {"tasks": self.tasks, "pending": self.pending}
        return Node(name="senders", kind="senders", mailbox=len(self.outbox), info=info)


def _resolve_all(futures: list[Waiter], outcomes: list[SendResult] | RocketMQError) -> None:
    """Resolve an auto-batch's futures: each with its own result, or every one with the
    batch's error. One that is done already (its caller cancelled it) is left as it is."""
    if isinstance(outcomes, RocketMQError):
        for future in futures:
            if not future.done():
                future.set_exception(outcomes)
    else:
        set_results(futures, outcomes)
