"""The concurrent consume service: ``concurrency`` workers over one work queue.

Queue actors put each pull's messages on the work queue as one share (a message that could
not be decoded goes alone), and every free worker takes the next ``consume_batch_size`` of
them, so the messages of one pull are consumed concurrently; the process queue forgets a
share's messages together once its last is done. A worker runs the handler on a batch and
settles it: once a share is done, the queue's offset moves to the smallest offset still cached
(so a message still in a handler holds back the offsets of its whole pull); a failure, in
clustering mode, sends the messages back to the broker (which redelivers them
through ``%RETRY%<group>`` with growing delays, and past ``max_reconsume_times`` to the DLQ);
if that send-back fails too, the messages stay in the process queue (holding the offset back)
and are consumed again here after a back-off - never dropped. In broadcasting mode a failed
message is logged and skipped, as the Java client does.

A batch is settled message by message (:func:`.dispatch.settled`): an acked message is
committed, a failed one (nacked, or left unsettled by a handler that raised) is sent back, so a
batch handler that nacks one message and returns sends back that one only. A handler running
past ``consume_timeout`` is cancelled by the sweeper through its worker's cancel scope (one
scope per worker, not one per message: a scope per message is a large part of the consume
path's cost, benchmarks/nullbroker.py path d): the messages it did not ack count as failures.
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


class ConcurrentOwner(Protocol):
    offsets: OffsetStore
    retry_delay_level: int

    @property
    def clustering(self) -> bool: ...
    @property
    def stopping(self) -> bool: ...
    async def send_back(self, message: MessageExt, delay_level: int) -> bool: ...
    def flow_changed(self) -> None: ...


class _Share:
    """Messages of one queue on the work queue (a pull's, a poison message, or some to retry
    here) that the workers share: each free worker takes the next ``size`` of them, and once
    the last is done the process queue forgets them together (one commit and one flow signal,
    not one a message). ``kept``: the offsets of those it must not forget (held elsewhere: by
    a retry here, a requeue, or left unconsumed)."""

    __slots__ = ("kept", "left", "messages", "next", "pq", "size")

    def __init__(self, pq: ProcessQueue, messages: list[MessageExt], size: int) -> None:
        self.pq = pq
        self.messages = messages
        self.size = size
        self.next = 0  # the first not taken yet
        self.left = len(messages)  # not done yet
        self.kept: set[int] | None = None

    def take(self) -> tuple[Taken, bool]:
        """The next messages, and whether any is left after them (``WorkQueue.get_part``)."""
        i, messages = self.next, self.messages
        if self.size == 1:  # (the usual consumer)
            self.next = i + 1
            return (self, [messages[i]]), i + 1 < len(messages)
        self.next = j = i + self.size
        return (self, messages[i:j]), j < len(messages)

    def keep(self, messages: list[MessageExt]) -> None:
        if messages:
            kept = self.kept if self.kept is not None else set()
            kept.update(m.queue_offset for m in messages)
            self.kept = kept

    def done(self, count: int) -> bool:
        """``count`` more are done: True when that was the last."""
        self.left -= count
        return not self.left

    def forgotten(self) -> list[MessageExt]:
        kept = self.kept
        if kept is None:
            return self.messages
        return [m for m in self.messages if m.queue_offset not in kept]


#: what a worker takes: messages and the share they are part of
Taken = tuple[_Share, list[MessageExt]]


@attrs.define(eq=False)
class _Worker:
    scope: anyio.CancelScope | None = None
    started: float = 0.0
    busy: bool = False
    timed_out: bool = False  # the sweeper cancelled its scope


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
    ) -> None:
        self.owner = owner
        self.dispatcher = dispatcher
        self.concurrency = concurrency
        self.consume_batch_size = consume_batch_size
        self.consume_timeout = consume_timeout
        self._local_retry = Backoff.constant(local_retry_delay)
        # room for several pulls: a queue actor that waited for room with its pull's messages
        # sent its next pull only once the workers had taken them, and the workers then waited
        # for it (the consume path of benchmarks/nullbroker.py). What is queued here is cached
        # in its process queue too, whose limits bound it.
        self.work: WorkQueue[_Share] = WorkQueue(max(concurrency * 2, 8))
        self.local_retries = 0
        self._workers: list[_Worker] = []
        self._tg: TaskGroup | None = None

    async def accept(self, pq: ProcessQueue, fresh: list[MessageExt]) -> None:
        """From a queue actor: put freshly pulled messages on the work queue (waiting while it
        is full: that is the flow control between pulling and consuming)."""
        plain = fresh
        if any(m.decode_error is not None for m in fresh):  # poison goes alone
            plain = [m for m in fresh if m.decode_error is None]
            for message in fresh:
                if message.decode_error is not None:
                    await self._put(_Share(pq, [message], 1))
        if plain:
            await self._put(_Share(pq, plain, self.consume_batch_size))

    async def _put(self, share: _Share) -> None:
        if not self.work.offer(share):
            await self.work.put(share)

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
        work, owner, dispatcher, take = self.work, self.owner, self.dispatcher, _Share.take
        while True:
            current: Taken | None = None
            returned: tuple[Taken, bool | None] | None = None
            me.timed_out = False
            try:
                with anyio.CancelScope() as me.scope:
                    while True:
                        try:
                            current = share, messages = await work.get_part(take)
                        except anyio.EndOfStream:
                            return
                        if share.pq.dropped or owner.stopping:  # not consumed here: left as is
                            share.keep(messages)
                            self._done(share, messages)
                            current = None
                            continue
                        me.started = began = time.monotonic()
                        me.busy = True
                        outcome = await dispatcher.invoke_one(messages, began)
                        me.busy = False
                        if me.timed_out:  # the sweeper's cancel came as the handler returned:
                            returned = current, outcome  # not a time-out; settled out of the
                            break  # cancelled scope
                        current = None  # (settled here: a stop meanwhile included)
                        if outcome is True:  # (the common case: no coroutine a call)
                            share.left -= len(messages)  # (_Share.done, inlined)
                            if not share.left:
                                self._consumed(share)
                        else:
                            await self._settle(share, messages, outcome)
            except BaseException:  # the service stops, or restarts: what the handler was
                if current is not None:  # given is consumed later (the sweeper's cancel too,
                    self._give_back(*current)  # if one came with it)
                    self._done(*current)
                raise
            me.busy = False
            if returned is not None:
                (share, messages), outcome = returned
                if outcome is True:
                    self._done(share, messages)
                else:
                    await self._settle(share, messages, outcome)
            elif current is not None:  # cancelled by the sweeper: the handler timed out (the
                # messages it acked before are consumed)
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
                    worker.timed_out = True
                    worker.scope.cancel()

    def _done(self, share: _Share, messages: list[MessageExt]) -> None:
        if share.done(len(messages)):
            self._consumed(share)

    def _consumed(self, share: _Share) -> None:
        """The share is done: the process queue forgets its messages (consumed, or sent back;
        not those it keeps) and the offset moves as far as that allows."""
        pq = share.pq
        offset = pq.remove(share.forgotten())
        if not pq.dropped:
            self.owner.offsets.update(pq.queue, offset)
        self.owner.flow_changed()

    def _give_back(self, share: _Share, messages: list[MessageExt]) -> None:
        """Taken but not consumed (the worker was cancelled): back in front as a share of their
        own (dropped once the service is closed: they stay in the process queue, unconsumed)."""
        share.keep(messages)
        self.work.requeue(_Share(share.pq, messages, len(messages)))

    async def _settle(
        self, share: _Share, messages: list[MessageExt], outcome: bool | None
    ) -> None:
        """After a handler: commit (success), send back or keep to retry here (failure)."""
        owner, pq = self.owner, share.pq
        if outcome is None:  # the consumer stops: what was acked is committed, the rest stays
            # in the process queue (the offset stays before them) and is delivered again
            share.keep([m for m in messages if settled(m) is not Outcome.ACK])
        elif not outcome and owner.clustering and not pq.dropped:
            # each by its own outcome (see dispatch): an ack - explicit, or implicit when the
            # handler returned - is committed; a nack goes back with its delay, and so does a
            # message left unsettled by a handler that raised or timed out
            failed = [m for m in messages if settled(m) is not Outcome.ACK]
            kept: list[MessageExt] = []
            tried = 0
            try:
                for message in failed:
                    if not await owner.send_back(message, self._level(message)):
                        kept.append(message)
                    tried += 1
            except BaseException:  # a stop or restart while sending back: what is not back
                again = kept + failed[tried:]  # on the broker is consumed again here
                self._give_back(share, again)
                self._done(share, messages)
                raise
            if kept:  # they hold the offset back; consumed again here
                share.keep(kept)
                for message in kept:  # as Java counts them (processConsumeResult)
                    message.reconsume_times += 1
                self.local_retries += len(kept)
                if self._tg is not None:
                    self._tg.start_soon(self._retry_locally, pq, kept)
        self._done(share, messages)

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
        try:
            await self._local_retry.sleep()
        finally:  # (a restart cancels the wait: the workers after it take them)
            if not pq.dropped:
                self.work.requeue(_Share(pq, messages, len(messages)))

    def describe(self) -> Node:
        busy = sum(1 for w in self._workers if w.busy)
        return Node(
            name="consume", kind="consume-service", mailbox=len(self.work),
            info={"mode": "concurrent", "workers": len(self._workers), "busy": busy,
                  "consumed": self.dispatcher.consumed, "failed": self.dispatcher.failed},
        )  # fmt: skip
