"""A send's first attempt started without a task (``submit``'s path, as the Java client's
asynchronous send): one object per message in flight, which the connection completes itself
when the answer arrives (:meth:`BrokerConnection.start_encoded` with a completion: no future,
no callback scheduled) and which encodes the frame, with no closure (a closure's cells are
objects the garbage collector counts: benchmarks/nullbroker.py, path b_pipelined_nowait_1k).

When the answer is SEND_OK the send is done here; any other outcome (an error answer, a lost
connection, a timeout) is handed back to :meth:`SendLoop.send`, which handles it as any
attempt's and retries, in a sender task.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

from rocketmq_actors.cluster.routes import TopicRoute
from rocketmq_actors.errors import ConnectionLost, RocketMQError
from rocketmq_actors.logs import get_logger
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.codes import ResponseCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.protocol.sendframe import SendFrameEncoder
from rocketmq_actors.runtime.connection import BrokerConnection

from .prepare import Prepared
from .result import SendResult, status_of_code

__all__ = ["AttemptFrame", "AttemptLoop", "FirstAttempt"]

log = get_logger("rocketmq_actors.producer")

_SUCCESS = int(ResponseCode.SUCCESS)  # (a plain int: the cheapest comparison)


class AttemptLoop(Protocol):
    """What a first attempt calls on the send loop that started it (``SendLoop``)."""

    in_flight: int  # sends under way: one less when the attempt ends
    on_done: Callable[[], None] | None  # told when one ends (while stopping)

    def result_of(
        self,
        prepared: Prepared,
        queue: MessageQueue,
        addr: str,
        reply: RemotingCommand,
        started: float,
    ) -> SendResult: ...

    def attempt_failed(self, topic: str, broker: str, exc: RocketMQError) -> None: ...


class AttemptFrame:
    """The frame of one attempt: its :meth:`encode` is what the connection calls, with the
    opaque, as the request starts (a bound method of one small object: a closure would
    make cells of the send loop's locals, each an object, and every read of them slower)."""

    __slots__ = ("batch", "encoder", "opaque", "prepared", "queue")

    def __init__(
        self, encoder: SendFrameEncoder, prepared: Prepared, queue: MessageQueue, batch: bool
    ) -> None:
        self.encoder = encoder
        self.prepared = prepared
        self.queue = queue
        self.batch = batch
        self.opaque = 0

    def encode(self, opaque: int) -> bytes:
        """The SEND_MESSAGE_V2 (or SEND_BATCH_MESSAGE) frame; born now."""
        prepared, queue = self.prepared, self.queue
        self.opaque = opaque
        born = time.time_ns() // 1_000_000  # (called once, as the request starts)
        return self.encoder.encode(
            opaque, prepared.topic, queue.queue_id, prepared.body, born,
            prepared.properties, queue.broker_name, sys_flag=prepared.sys_flag,
            flag=prepared.flag, batch=self.batch,
        )  # fmt: skip


class FirstAttempt(AttemptFrame):
    """A first attempt in flight (the connection's completion for it), then, when it did not
    end in SEND_OK, what :meth:`SendLoop.send` goes on from: its route, queue, master
    address, start and deadline (set by :meth:`SendLoop.start_first`), and ``outcome`` (the
    answer or the error). The senders' queue item is one (one object a message in flight:
    each is one more for the garbage collector to count and scan, benchmarks/nullbroker.py,
    path b_pipelined_nowait_1k).

    Abstract: a subclass sets ``loop``, ``encoder``, ``prepared``, ``batch`` (False),
    ``opaque`` and ``outcome`` (None) as it is built (no call to an ``__init__`` of ours: it
    is built once a message), and implements :meth:`first_done`."""

    __slots__ = ("addr", "conn", "deadline", "loop", "outcome", "route", "started")

    loop: AttemptLoop
    outcome: RemotingCommand | RocketMQError | None
    route: TopicRoute  # (this and the rest: set by SendLoop.start_first)
    addr: str
    conn: BrokerConnection
    started: float
    deadline: float

    def first_done(self, outcome: SendResult | Exception | None) -> None:
        """The end of the attempt, from the connection: its :class:`SendResult`, None when
        :meth:`SendLoop.send` is to go on from the attempt (its ``outcome``), or the
        exception of a bug."""
        raise NotImplementedError

    # ---- the connection's completion (called from its reader or its deadline watcher) ----

    def done(self) -> bool:
        return self.outcome is not None

    def set_result(self, reply: RemotingCommand) -> None:
        self.outcome = reply
        outcome: SendResult | Exception | None = None
        if reply.code == _SUCCESS:
            try:
                outcome = self.loop.result_of(
                    self.prepared, self.queue, self.addr, reply, self.started
                )
            except Exception as exc:  # (SendFailed: a malformed answer; else a bug)
                outcome = exc
        self._end(outcome)

    def set_exception(self, exc: BaseException) -> None:
        # (the connection fails a request with ConnectionLost or RequestTimeout)
        error = exc if isinstance(exc, RocketMQError) else ConnectionLost(self.addr, repr(exc))
        self.outcome = error
        try:  # at once: the next first attempts avoid the broker (the retry comes later)
            self.loop.attempt_failed(self.prepared.topic, self.queue.broker_name, error)
        except Exception as bug:  # never into the connection's reader
            log.error("producer.send_internal_error", topic=self.prepared.user_topic,
                      exc_info=bug)  # fmt: skip
        self._end(None)

    @property
    def may_be_stored(self) -> bool:
        """Whether the broker may have stored the message: an answer saying it was stored
        (not flushed or replicated as asked), or a failure whose outcome is unknown."""
        outcome = self.outcome
        if isinstance(outcome, RocketMQError):
            return outcome.outcome_unknown
        return outcome is not None and status_of_code(outcome.code) is not None

    def _end(self, outcome: SendResult | Exception | None) -> None:
        loop = self.loop
        self.conn.finish(self.opaque, self, self.prepared.size)
        loop.in_flight -= 1
        try:
            if loop.on_done is not None:
                loop.on_done()  # a stop is waiting for sends in flight
            self.first_done(outcome)
        except Exception as exc:  # a bug: never into the connection's reader
            log.error("producer.send_internal_error", topic=self.prepared.user_topic,
                      exc_info=exc)  # fmt: skip
