"""The trace dispatcher: a supervised child that sends trace records to the trace topic.

Java: ``AsyncTraceDispatcher``. Records are appended by the send and consume hooks without
waiting (:meth:`TraceDispatcher.append` is a plain function): a bounded queue of ``capacity``
records (Java's ``traceContextQueue``: 1024) takes them, and when it is full the record is
dropped and counted (``rocketmq_client_trace_dropped_total``, a ``trace.dropped`` event the
first time) - a slow or stuck broker never slows or fails a send or a handler. The actor waits
``linger`` seconds after the first record of a batch (Java's ``waitTimeThresholdMil``) or until
half the queue is taken, then sends what it has as one trace message per cut (a cut when the
text reaches ``max_body`` characters, ``maxMsgSize - 10 * 1000``, or its keys
``MAX_MSG_KEY_SIZE`` characters), keyed by the traced message ids and keys
(``queryMsgTraceById`` looks them up by key). A stop flushes what is queued within the owner's
deadline (:meth:`TraceDispatcher.flush`).

Sending is the owning client's: it hands the dispatcher a :data:`Send` function, made by the
:class:`SendFactory` it was given (the producer's ``trace_sender``: a plain send loop of its
own on the client instance, as the trace producer group Java names
``_INNER_TRACE_PRODUCER-<group>-<type>``, which no hook sees: trace messages are never
traced). This package imports nothing from the producer.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Protocol

import anyio
from anyio.abc import TaskStatus

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.errors import RocketMQError
from rocketmq_actors.logs import get_logger
from rocketmq_actors.metrics import METRICS
from rocketmq_actors.protocol.trace import TRACE_GROUP_PREFIX, TraceRecord, encode_record
from rocketmq_actors.runtime.signal import Signal
from rocketmq_actors.runtime.supervisor import ChildSpec, Restart
from rocketmq_actors.runtime.tree import Node

__all__ = ["MAX_BODY", "MAX_KEYS", "Send", "SendFactory", "TraceDispatcher", "trace_group"]

log = get_logger("rocketmq_actors.trace")

Send = Callable[[str, bytes, list[str]], Awaitable[object]]  # (topic, body, keys)


class SendFactory(Protocol):
    """Makes the :data:`Send` of a client's trace messages (``kind``: ``"PRODUCER"`` or
    ``"CONSUMER"``, as Java names the trace producer group)."""

    def __call__(self, instance: ClientInstance, *, group: str, kind: str) -> Send: ...


MAX_BODY = 128_000 - 10 * 1000  # AsyncTraceDispatcher: maxMsgSize less its margin
MAX_KEYS = 32767 - 10000  # AsyncTraceDispatcher.MAX_MSG_KEY_SIZE (properties are a short)
CAPACITY = 1024  # AsyncTraceDispatcher.traceContextQueue
LINGER = 0.5  # AsyncTraceDispatcher.waitTimeThresholdMil


class TraceDispatcher:
    """The actor that batches trace records and sends them to the trace topic (see the module
    docstring); each producer or consumer with ``ClientOptions(trace=True)`` runs one as a
    supervised child."""

    def __init__(
        self,
        send: Send,
        *,
        group: str,
        topic: str,
        capacity: int = CAPACITY,
        linger: float = LINGER,
        max_body: int = MAX_BODY,
        max_keys: int = MAX_KEYS,
    ) -> None:
        self._send = send
        self.group = group
        self.topic = topic
        self.capacity = capacity
        self.linger = linger
        self.max_body = max_body
        self.max_keys = max_keys
        self._queue: deque[TraceRecord] = deque()
        self._wake = Signal()  # a record came, or a flush was asked for
        self._progress = Signal()  # a batch was sent (or failed)
        self._flush_now = False
        self._sending = 0  # records taken off the queue and not yet answered for
        self.sent = 0  # records in trace messages the broker took
        self.failed = 0  # records in trace messages that could not be sent
        self.dropped = 0  # records refused because the queue was full

    # ---- the hooks' side: never waits ---------------------------------------------------

    def append(self, record: TraceRecord) -> bool:
        """Queue ``record`` for sending; False (and counted) when the queue is full."""
        if len(self._queue) >= self.capacity:
            self.dropped += 1
            METRICS.inc("rocketmq_client_trace_dropped_total", group=self.group)
            if self.dropped == 1:  # once: a full queue would otherwise log at its own rate
                log.warning("trace.dropped", group=self.group, topic=self.topic,
                            capacity=self.capacity)  # fmt: skip
            return False
        self._queue.append(record)
        self._wake.set()
        return True

    @property
    def queued(self) -> int:
        """Records waiting to be sent."""
        return len(self._queue)

    # ---- the actor ----------------------------------------------------------------------

    async def run(self, *, task_status: TaskStatus[TraceDispatcher]) -> None:
        """The actor's loop: send each batch as it is due, until cancelled."""
        task_status.started(self)
        while True:
            while not self._queue:
                await self._wake.wait()
            if not self._flush_now:  # gather a batch: until linger passes or it is full
                with anyio.move_on_after(self.linger):
                    while not self._flush_now and not self._batch_full():
                        await self._wake.wait()
            await self._send_queued()

    def _batch_full(self) -> bool:
        # half the queue: send now, so that the other half takes what comes meanwhile (Java's
        # worker moves records off its queue into the batch as they come; ours stay queued
        # until sent). The cut at the size limits is exact, in _send_queued.
        return len(self._queue) * 2 >= self.capacity

    async def _send_queued(self) -> None:
        """Send everything queued now, cut into trace messages of at most ``max_body``
        characters and ``max_keys`` key characters (Java cuts once a record crosses them)."""
        records = list(self._queue)
        self._queue.clear()
        self._sending = len(records)
        try:
            texts: list[str] = []
            keys: dict[str, None] = {}  # (ordered, without repeats: Java's key set)
            size = key_size = count = 0
            for record in records:
                text, record_keys = encode_record(record)
                texts.append(text)
                size += len(text)
                count += 1
                for key in record_keys:
                    if key not in keys:
                        keys[key] = None
                        key_size += len(key)
                if size >= self.max_body or key_size >= self.max_keys:
                    await self._send_one(texts, list(keys), count)
                    texts, keys, size, key_size, count = [], {}, 0, 0, 0
            if count:
                await self._send_one(texts, list(keys), count)
        finally:
            self._sending = 0
            if not self._queue:
                self._flush_now = False
            self._progress.set()

    async def _send_one(self, texts: list[str], keys: list[str], count: int) -> None:
        try:
            await self._send(self.topic, "".join(texts).encode("utf-8"), keys)
        except RocketMQError as exc:  # lost, as Java loses them: logged and counted
            self.failed += count
            METRICS.inc("rocketmq_client_trace_records_total", count, group=self.group,
                        result="failed")  # fmt: skip
            log.info("trace.send_failed", group=self.group, topic=self.topic, records=count,
                     error=str(exc))  # fmt: skip
        else:
            self.sent += count
            METRICS.inc("rocketmq_client_trace_records_total", count, group=self.group,
                        result="sent")  # fmt: skip
        finally:
            self._sending -= count

    async def flush(self, timeout: float) -> bool:
        """Send what is queued now, waiting at most ``timeout`` seconds; True if all went
        (sent or failed) in time. The owner calls it when it stops, before its children are
        cancelled."""
        with anyio.move_on_after(timeout):
            while self._queue or self._sending:
                self._flush_now = True
                self._wake.set()
                await self._progress.wait()
            return True
        log.info("trace.flush_incomplete", group=self.group, queued=len(self._queue))
        return False

    def child_spec(self) -> ChildSpec[TraceDispatcher]:
        """The owner's supervised child (PERMANENT: a failure that repeats stops the owner)."""
        return ChildSpec("trace", self.run, Restart.PERMANENT, kind="trace-dispatcher")

    def describe(self) -> Node:
        return Node(
            name="trace-dispatcher", kind="trace-dispatcher", mailbox=len(self._queue),
            info={"topic": self.topic, "sent": self.sent, "failed": self.failed,
                  "dropped": self.dropped},
        )  # fmt: skip


def trace_group(group: str, kind: str) -> str:
    """The producer group trace messages are sent as (Java:
    ``AsyncTraceDispatcher.genGroupNameForTrace``, less its per-process counter)."""
    return f"{TRACE_GROUP_PREFIX}-{group}-{kind}"


def now_ms() -> int:
    return time.time_ns() // 1_000_000
