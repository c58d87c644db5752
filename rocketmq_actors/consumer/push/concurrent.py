"""The concurrent consume service: ``concurrency`` workers over one work queue.

Queue actors put what they pull on the work queue in batches of up to ``consume_batch_size``
(a message that could not be decoded goes alone); a worker runs the handler on a batch and
settles it: a success moves the queue's offset to the smallest offset not yet consumed; a
failure, in clustering mode, sends the messages back to the broker (which redelivers them
through ``%RETRY%<group>`` with growing delays, and past ``max_reconsume_times`` to the DLQ);
if that send-back fails too, the messages stay in the process queue (holding the offset back)
and are consumed again here after a back-off - never dropped. In broadcasting mode a failed
message is logged and skipped, as the Java client does.

A batch is settled message by message (:func:`.dispatch.settled`): an acked message is
committed, a failed one (nacked, or left unsettled by a handler that raised) is sent back, so a
batch handler that nacks one message and returns sends back that one only. A handler running
past ``consume_timeout`` is cancelled by the sweeper through its worker's cancel scope (one
scope per worker, not one per message: a scope per message costs a third of the throughput):
the messages it did not ack count as failures.
"""

from __future__ import annotations

import time
from typing import Protocol

import anyio
import attrs
from anyio.abc import TaskGroup, TaskStatus

from rocketmq_actors.consumer.core.dispatch import Dispatcher, settled
from rocketmq_actors.consumer.core.message import ReceivedMessage
from rocketmq_actors.consumer.core.offsets import OffsetStore
from rocketmq_actors.consumer.core.process_queue import ProcessQueue
from rocketmq_actors.consumer.core.sendback import DLQ_NOW
from rocketmq_actors.consumer.core.settlement import Outcome
from rocketmq_actors.protocol.records import MessageExt
from rocketmq_actors.runtime.backoff import Backoff
from rocketmq_actors.runtime.tree import Node
from rocketmq_actors.runtime.workqueue import WorkQueue

__all__ = ["ConcurrentConsumeService"]

Work = tuple[ProcessQueue, list[MessageExt]]


class ConcurrentOwner(Protocol):
    offsets: OffsetStore
    retry_delay_level: int

    @property
    def clustering(self) -> bool: ...
    @property
    def stopping(self) -> bool: ...
    async def send_back(self, message: MessageExt, delay_level: int) -> bool: ...
    def flow_changed(self) -> None: ...


@attrs.define(eq=False)
class _Worker:
    scope: anyio.CancelScope | None = None
    started: float = 0.0
    busy: bool = False


class ConcurrentConsumeService:
    def __init__(
        self,
        owner: ConcurrentOwner,
        dispatcher: Dispatcher,
        *,
        concurrency: int,
        consume_batch_size: int,
        consume_timeout: float | None,
        local_retry_delay: float,
        pull_batch_size: int,
    ) -> None:
        self.owner = owner
        self.dispatcher = dispatcher
        self.concurrency = concurrency
        self.consume_batch_size = consume_batch_size
        self.consume_timeout = consume_timeout
        self._local_retry = Backoff.constant(local_retry_delay)
        # room for the items of several pulls: a queue actor that waited for room with its
        # pull's messages sent its next pull only once the workers had taken them, and the
        # workers then waited for it (the consume path of benchmarks/nullbroker.py). What is
        # queued here is cached in its process queue too, whose limits bound it.
        pulls = 8 * -(-pull_batch_size // consume_batch_size)
        self.work: WorkQueue[Work] = WorkQueue(max(concurrency * 2, pulls))
        self.local_retries = 0
        self._workers: list[_Worker] = []
        self._tg: TaskGroup | None = None

    async def accept(self, pq: ProcessQueue, fresh: list[MessageExt]) -> None:
        """From a queue actor: put freshly pulled messages on the work queue (waiting while it
        is full: that is the flow control between pulling and consuming)."""
        work, size = self.work, self.consume_batch_size
        plain = fresh
        if any(m.decode_error is not None for m in fresh):  # poison goes alone
            plain = [m for m in fresh if m.decode_error is None]
            for message in fresh:
                if message.decode_error is not None and not work.offer((pq, [message])):
                    await work.put((pq, [message]))
        for i in range(0, len(plain), size):
            item = (pq, plain[i : i + size])
            if not work.offer(item):
                await work.put(item)

    async def run(self, *, task_status: TaskStatus[ConcurrentConsumeService]) -> None:
        """The actor: the workers and the timeout sweeper."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            self._workers = []
            for _ in range(self.concurrency):
                tg.start_soon(self._worker)
            if self.consume_timeout is not None:
                tg.start_soon(self._sweep_timeouts, self.consume_timeout)
            task_status.started(self)

    def close(self) -> None:
        self.work.close()

    async def _worker(self) -> None:
        me = _Worker()
        self._workers.append(me)
        work, owner, dispatcher = self.work, self.owner, self.dispatcher
        while True:
            current: Work | None = None
            with anyio.CancelScope() as me.scope:
                while True:
                    try:
                        pq, messages = await work.get()
                    except anyio.EndOfStream:
                        return
                    if pq.dropped or owner.stopping:
                        continue
                    current = (pq, messages)
                    me.started = began = time.monotonic()
                    me.busy = True
                    try:
                        outcome = await dispatcher.invoke(messages, timed=False, began=began)
                    except BaseException:
                        if not me.scope.cancel_called:  # not the sweeper: the service stops,
                            work.requeue(current)  # or restarts - they are consumed later
                        raise
                    me.busy = False
                    if outcome is True:  # (the common case: no coroutine a call)
                        self._consumed(pq, messages)
                    else:
                        await self._settle(pq, messages, outcome)
                    current = None
            me.busy = False  # cancelled by the sweeper: the handler timed out
            if current is not None:  # the messages it acked before are consumed
                dispatcher.tally(current[1], me.started, TimeoutError("consume_timeout"))
                await self._settle(*current, False)

    async def _sweep_timeouts(self, timeout: float) -> None:
        """Cancel handlers that have run longer than ``timeout`` (checked every
        min(1 s, timeout / 4))."""
        while True:
            await anyio.sleep(min(1.0, timeout / 4))
            now = time.monotonic()
            for worker in self._workers:
                if worker.busy and now - worker.started > timeout and worker.scope is not None:
                    worker.scope.cancel()

    def _consumed(self, pq: ProcessQueue, done: list[MessageExt]) -> None:
        """Forget the messages ``done`` (consumed, or sent back) and commit what that allows;
        a plain call after a handler that consumed every message (no coroutine)."""
        if not done:
            offset = pq.commit_offset()
        for message in done:
            offset = pq.remove(message)  # (the offset safe to commit after the last)
        if not pq.dropped:
            self.owner.offsets.update(pq.queue, offset)
        self.owner.flow_changed()

    async def _settle(
        self, pq: ProcessQueue, messages: list[MessageExt], outcome: bool | None
    ) -> None:
        """After a handler: commit (success), send back or keep to retry here (failure)."""
        owner = self.owner
        done = messages
        if outcome is None:  # the consumer stops: what was acked is committed, the rest
            done = [m for m in messages if settled(m) is Outcome.ACK]  # stays in the process
            if not done:  # queue (the offset stays before them) and is delivered again
                return
        elif not outcome and owner.clustering and not pq.dropped:
            # each by its own outcome (see dispatch): an ack - explicit, or implicit when the
            # handler returned - is committed; a nack goes back with its delay, and so does a
            # message left unsettled by a handler that raised or timed out
            failed = [m for m in messages if settled(m) is not Outcome.ACK]
            sent = [await owner.send_back(m, self._level(m)) for m in failed]
            done = [m for m in messages if settled(m) is Outcome.ACK]
            done += [m for m, ok in zip(failed, sent, strict=True) if ok]
            kept = [m for m, ok in zip(failed, sent, strict=True) if not ok]
            if kept and self._tg is not None:  # they hold the offset back; consumed again here
                for message in kept:  # as Java counts them (processConsumeResult)
                    message.reconsume_times += 1
                self.local_retries += len(kept)
                self._tg.start_soon(self._retry_locally, pq, kept)
        self._consumed(pq, done)

    def _level(self, message: MessageExt) -> int:
        """The send-back delay level: the nack's, else the consumer's ``retry_delay_level``."""
        default = self.owner.retry_delay_level
        if message.decode_error is not None or not isinstance(message, ReceivedMessage):
            return default
        settlement = message.settlement
        if settlement is None:
            return default
        return DLQ_NOW if settlement.outcome is Outcome.DEAD else settlement.level(default)

    async def _retry_locally(self, pq: ProcessQueue, messages: list[MessageExt]) -> None:
        await self._local_retry.sleep()
        if not pq.dropped and not self.owner.stopping:
            await self.work.put((pq, messages))

    def describe(self) -> Node:
        busy = sum(1 for w in self._workers if w.busy)
        return Node(
            name="consume", kind="consume-service", mailbox=len(self.work),
            info={"mode": "concurrent", "workers": len(self._workers), "busy": busy,
                  "consumed": self.dispatcher.consumed, "failed": self.dispatcher.failed},
        )  # fmt: skip
