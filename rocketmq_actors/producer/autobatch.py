"""Auto-batching: single sends to one topic joined into SEND_BATCH_MESSAGE frames
(``ProducerOptions(auto_batch=True)``, the Java client's ``autoBatch``).

A message the senders admit with no key or selector, and that :attr:`Prepared.batchable` says
may share a frame, joins the open batch of its topic. The message that opens a batch puts it on
the senders' work queue: the batch leaves when a sender task takes it, with every message that
joined it by then (with ``batch_max_delay``, once that long has passed since its first message,
or sooner if it fills). A batch that reaches ``batch_max_bytes`` is closed at once, and the next
message opens another; none grows past ``max_message_size``. So nothing waits for a timer
unless asked to, and under load - many sends admitted while the senders are busy - the batches
grow by themselves.

A plain message (:func:`.prepare.is_plain`: no property but its id) joins without a
:class:`Prepared` of its own (:meth:`Batcher.add_plain`): its record is built from its body
straight away, and its id - its one property - once the batch is closed, with the other plain
messages' in one step (benchmarks/nullbroker.py's auto-batched paths; the Java client gives
each message its id as it is admitted, and the id's time is then that of the send). A batch
holds its messages' futures (and callbacks) itself, in lists: no object a message besides its
future stays alive while it is in flight, so that many sends in flight make the garbage
collector run no more often (benchmarks/nullbroker.py, paths e_autobatch_1k and
e_autobatch_nowait_1k).

The batch is sent as one of ``send_batch``'s chunks is (its retries, and the earliest deadline
of its messages), and its answer split into each message's :class:`SendResult` (its own ids,
the batch's queue offset plus its index), as Java's ``ProduceAccumulator`` does. A batch is
stored or refused whole: every message of a refused batch fails with the same error.
"""

from __future__ import annotations

import time
from typing import cast

import anyio

from rocketmq_actors.protocol.messages import (
    BATCH_PROPS_LENGTH,
    BATCH_RECORD_HEAD,
    UNIQ_ID_LENGTH,
    UniqueIdGenerator,
)
from rocketmq_actors.protocol.sendframe import BatchBody
from rocketmq_actors.runtime.soon import Call
from rocketmq_actors.runtime.waiters import Waiter

from .prepare import UNIQ_PREFIX, Prepared

__all__ = ["Batch", "Batcher"]

_HEAD = BATCH_RECORD_HEAD.pack
_PROPS_LENGTH = BATCH_PROPS_LENGTH.pack
_RECORD_OVERHEAD = BATCH_RECORD_HEAD.size + BATCH_PROPS_LENGTH.size
#: a plain message's properties: its id alone, ``UNIQ_KEY\x01<id>\x02``
_PLAIN_PROPS_LENGTH = len(UNIQ_PREFIX) + UNIQ_ID_LENGTH + 1
#: a plain message's record after its body, up to its id
_PLAIN_TAIL = _PROPS_LENGTH(_PLAIN_PROPS_LENGTH) + UNIQ_PREFIX.encode()
_PLAIN_OVERHEAD = _RECORD_OVERHEAD + _PLAIN_PROPS_LENGTH

#: a message joining a batch: its id (None: plain), record parts, record size, admitted size
_Joined = tuple[str | None, tuple[bytes, bytes, bytes, bytes | None], int, int]


class Batch:
    """The messages of one batch, in order - their futures, callbacks and ids - and its
    body's records as they were joined: four parts a record (head, body, properties, and the
    end of a plain message's properties: its id, None until the batch is closed)."""

    __slots__ = (
        "admitted", "callbacks", "closed", "created", "filled", "futures", "ids", "parts",
        "size", "timeout", "topic", "unnamed", "user_topic",
    )  # fmt: skip

    def __init__(self, topic: str, user_topic: str, created: float) -> None:
        self.topic = topic  # as sent (namespace-wrapped)
        self.user_topic = user_topic
        self.futures: list[Waiter] = []  # its messages' (what their senders await)
        self.callbacks: list[Call | None] | None = None  # theirs, once one of them has one
        self.admitted = 0  # the bytes its messages were admitted for (their bodies)
        self.ids: list[str | None] = []  # its messages' (UNIQ_KEY; a plain one's: None until
        self.unnamed = 0  # its batch is closed, as many as this)
        self.parts: list[bytes | None] = []  # per message: head, body, properties, plain id
        self.size = 0
        self.timeout: float | None = None  # the shortest of its messages' (None: the default)
        self.closed = False  # nothing joins it any more
        self.created = created  # (batch_max_delay's start; 0.0 without a delay)
        self.filled: anyio.Event | None = None  # (a sender waiting out the delay)

    def prepared(self) -> Prepared:
        """The batch, closed, as one SEND_BATCH_MESSAGE (its messages' ids in ``batch_ids``)."""
        assert not self.unnamed, "a batch is sent once closed"
        parts, ids = cast(list[bytes], self.parts), cast(list[str], self.ids)
        return Prepared(self.topic, self.user_topic, BatchBody(parts, self.size), "", "",
                        0, 0, ids, False, False, self.size)  # fmt: skip

    def name(self, ids: UniqueIdGenerator) -> None:
        """Give its plain messages their ids (it is closed: none joins any more)."""
        count, self.unnamed = self.unnamed, 0
        if not count:
            return
        fresh = ids.next_ids(count)
        if count == len(self.ids):  # (all plain: every fourth part is an id's)
            self.ids = cast(list[str | None], fresh)
            self.parts[3::4] = [f"{msg_id}\x02".encode() for msg_id in fresh]
            return
        names = iter(fresh)
        for index, known in enumerate(self.ids):
            if known is None:
                msg_id = self.ids[index] = next(names)
                self.parts[4 * index + 3] = f"{msg_id}\x02".encode()


class Batcher:
    """The open batch of each topic, and the rules of joining and closing them."""

    def __init__(
        self,
        *,
        max_bytes: int,
        max_delay: float,
        max_size: int,
        ids: UniqueIdGenerator,
        max_held: int = 32 << 20,
    ) -> None:
        self.max_bytes = min(max_bytes, max_size)
        self.max_delay = max_delay
        self.max_size = max_size
        self.max_held = max_held
        self.ids = ids  # the producer's: its plain messages' ids (its host's address in them)
        self.held = 0  # bytes in batches not answered yet (Java's currentlyHoldSize)
        self._open: dict[str, Batch] = {}

    def takes(self, prepared: Prepared) -> bool:
        """May ``prepared`` join a batch? Batchable, small enough to share a frame (text
        properties that are not ASCII counted at the most they can encode to), and the batches
        not answered yet hold less than ``total_batch_max_bytes``."""
        if not prepared.batchable or self.held >= self.max_held:
            return False
        props = prepared.properties
        props_size = len(props) if props.isascii() else 3 * len(props)
        return prepared.size + props_size + _RECORD_OVERHEAD <= self.max_size

    def takes_plain(self, size: int) -> bool:
        """May a plain message of ``size`` bytes join a batch (as :meth:`takes` says of any
        other)?"""
        return self.held < self.max_held and size + _PLAIN_OVERHEAD <= self.max_size

    def add(
        self, prepared: Prepared, future: Waiter, timeout: float | None, callback: Call | None
    ) -> Batch | None:
        """Join the message ``prepared`` (which :meth:`takes`), admitted with ``future``,
        ``timeout`` and ``callback``, to its topic's open batch. The batch it opened, if it
        opened one - the caller queues that for a sender - else None."""
        body = cast(bytes, prepared.body)  # (a batch's body is never batchable)
        props = prepared.properties.encode()
        size = len(body)
        record = _RECORD_OVERHEAD + size + len(props)
        parts = (_HEAD(record, 0, 0, prepared.flag, size), body,
                 _PROPS_LENGTH(len(props)) + props, b"")  # fmt: skip
        names = (prepared.topic, prepared.user_topic)
        joined = (prepared.msg_id, parts, record, prepared.size)
        return self._join(names, joined, future, timeout, callback)

    def add_plain(  # noqa: PLR0917 - positional: once per message
        self,
        names: tuple[str, str],
        flag: int,
        body: bytes,
        future: Waiter,
        timeout: float | None,
        callback: Call | None,
    ) -> Batch | None:
        """:meth:`add` for a plain message (:meth:`takes_plain`) of topic ``names`` (as sent,
        as the user named it): its id is given when its batch is closed."""
        size = len(body)
        record = _PLAIN_OVERHEAD + size
        joined = (None, (_HEAD(record, 0, 0, flag, size), body, _PLAIN_TAIL, None), record, size)
        return self._join(names, joined, future, timeout, callback)

    def _join(
        self,
        names: tuple[str, str],
        joined: _Joined,
        future: Waiter,
        timeout: float | None,
        callback: Call | None,
    ) -> Batch | None:
        """Add a message - its id (None for a plain message), record parts, record size and
        the size it was admitted for - to its topic's open batch (opened if there is none, or
        it has no room for it), with its future and callback, in its order. The batch if this
        message opened it, else None; it is closed once it is full. Open batches go by the
        topic as the user named it, which is also each message's result's (two names, with and
        without the namespace, may be sent as one topic)."""
        msg_id, parts, record, admitted = joined
        user_topic = names[1]
        batch = self._open.get(user_topic)  # (the record is built: nothing fails from here)
        if batch is None or batch.size + record > self.max_size:
            if batch is not None:
                self.close(batch)
            created = time.monotonic() if self.max_delay else 0.0
            batch = self._open[user_topic] = Batch(names[0], user_topic, created)
        batch.ids.append(msg_id)
        if msg_id is None:
            batch.unnamed += 1
        batch.parts += parts
        batch.size += record
        self.held += record
        if timeout is not None and (batch.timeout is None or timeout < batch.timeout):
            batch.timeout = timeout
        futures = batch.futures
        opened = None if futures else batch
        futures.append(future)
        callbacks = batch.callbacks
        if callback is not None:
            if callbacks is None:  # (the first with one: the others' are None)
                callbacks = batch.callbacks = [None] * (len(futures) - 1)
            callbacks.append(callback)
        elif callbacks is not None:
            callbacks.append(None)
        batch.admitted += admitted
        if batch.size >= self.max_bytes:
            self.close(batch)
        return opened

    async def ready(self, batch: Batch) -> None:
        """Close ``batch`` for a sender that took it: at once, or with ``batch_max_delay``
        once that has passed since its first message (or it filled before)."""
        try:
            if self.max_delay and not batch.closed:
                remaining = batch.created + self.max_delay - time.monotonic()
                if remaining > 0:
                    batch.filled = anyio.Event()
                    with anyio.move_on_after(remaining):
                        await batch.filled.wait()
        finally:  # (a sender cancelled meanwhile too: no later message joins it)
            self.close(batch)

    def close(self, batch: Batch) -> None:
        """Nothing joins ``batch`` any more: its plain messages get their ids."""
        batch.closed = True
        batch.name(self.ids)
        if self._open.get(batch.user_topic) is batch:
            del self._open[batch.user_topic]
        if batch.filled is not None:
            batch.filled.set()

    def done(self, batch: Batch) -> None:
        """``batch`` was answered (or will never be sent): its bytes are no longer held."""
        self.held -= batch.size

    def drop(self, batch: Batch) -> None:
        """Close ``batch``, which will never be sent (its one message was refused)."""
        self.close(batch)
        self.done(batch)

    def close_all(self) -> None:
        """Close every open batch (the producer stopped: a later message opens a new one)."""
        for batch in list(self._open.values()):
            self.close(batch)
