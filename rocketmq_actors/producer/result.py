"""The outcome of a successful send."""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterator, Sequence
from typing import Any, overload

import attrs

from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.codes import ResponseCode

__all__ = ["BatchResults", "SendResult", "SendStatus"]


class SendStatus(enum.Enum):
    """Every status means the broker stored the message; the last three say a durability
    step (sync flush, replication) did not complete in time."""

    SEND_OK = "SEND_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"


_BY_CODE: dict[int, SendStatus] = {
    ResponseCode.SUCCESS: SendStatus.SEND_OK,
    ResponseCode.FLUSH_DISK_TIMEOUT: SendStatus.FLUSH_DISK_TIMEOUT,
    ResponseCode.FLUSH_SLAVE_TIMEOUT: SendStatus.FLUSH_SLAVE_TIMEOUT,
    ResponseCode.SLAVE_NOT_AVAILABLE: SendStatus.SLAVE_NOT_AVAILABLE,
}

#: the status of a send answer's code; None: not stored (a dict's own ``get``, no frame of
#: ours on the send path)
status_of_code: Callable[[int], SendStatus | None] = _BY_CODE.get


@attrs.frozen(kw_only=True)
class SendResult:
    """A stored send: its status, the message ids, the queue and offset it was stored at (and
    a transactional send's id, the region, a timer message's recall handle)."""

    status: SendStatus
    msg_id: str  # the client id (UNIQ_KEY)
    offset_msg_id: str  # the broker's id: store host + commit-log offset
    queue: MessageQueue  # topic without namespace
    queue_offset: int
    transaction_id: str | None = None
    region_id: str | None = None
    #: what :meth:`Producer.recall` takes: a 5.3.2+ broker's answer to a timer message
    #: (``delay_ms`` / ``deliver_at_ms``) sent alone; None for any other send
    recall_handle: str | None = None
    #: False when the broker says its message trace is switched off (``TRACE_ON=false`` in
    #: the reply, as Java's ``SendResult.isTraceOn``): no Pub trace record is written then
    trace_on: bool = True

    def split(self, msg_ids: Sequence[str]) -> list[SendResult]:
        """The results of a SEND_BATCH_MESSAGE's messages (client ids ``msg_ids``, in order)
        from its reply's result (``offset_msg_id`` comma-joined, as the broker sends it; a
        missing one is empty)."""
        offset_ids = self.offset_msg_id.split(",")
        offset_ids += [""] * (len(msg_ids) - len(offset_ids))
        return self.members(msg_ids, offset_ids)

    def members(self, msg_ids: Sequence[str], offset_msg_ids: Sequence[str]) -> list[SendResult]:
        """The results of the batch's messages, in order, from this (the batch's) result: each
        its own ids, the batch's queue offset plus its index (auto-batches, and ``send_batch``
        through :class:`BatchResults`); the broker gives no recall handle to a batch."""
        status, queue, offset, region = self.status, self.queue, self.queue_offset, self.region_id
        trace_on = self.trace_on
        return [
            new_send_result(
                status,
                msg_id,
                offset_msg_ids[index],
                queue,
                offset + index,
                None,
                region,
                None,
                trace_on,
            )
            for index, msg_id in enumerate(msg_ids)
        ]


class BatchResults(Sequence[SendResult]):
    """What :meth:`Producer.send_batch` returns: one :class:`SendResult` per message, in the
    batch's order (each its own ids; the queue offset is the first one's plus its index).

    A sequence, compared equal to a list of the same results. The results are built from the
    brokers' replies when first read: a caller that only needs to know the batch was stored (no
    exception) pays nothing for them; reading them costs a little per message, once.
    """

    __slots__ = ("_chunks", "_count", "_results")

    def __init__(self) -> None:
        self._chunks: list[tuple[SendResult, Sequence[str]]] = []
        self._count = 0
        self._results: list[SendResult] | None = None

    def add_chunk(self, result: SendResult, msg_ids: Sequence[str]) -> None:
        """One SEND_BATCH_MESSAGE's reply (its ``offset_msg_id`` comma-joined, as the broker
        sends it) and the client ids of its messages, in order."""
        self._chunks.append((result, msg_ids))
        self._count += len(msg_ids)

    def _all(self) -> list[SendResult]:
        results = self._results
        if results is None:
            results = []
            for chunk, msg_ids in self._chunks:
                results += chunk.split(msg_ids)
            self._results = results
        return results

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> SendResult: ...
    @overload
    def __getitem__(self, index: slice) -> list[SendResult]: ...
    def __getitem__(self, index: int | slice) -> SendResult | list[SendResult]:
        return self._all()[index]

    def __iter__(self) -> Iterator[SendResult]:
        return iter(self._all())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, BatchResults):
            return self._all() == other._all()
        if isinstance(other, list):
            return self._all() == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # (mutable while send_batch fills it)

    def __repr__(self) -> str:
        return f"BatchResults({self._all()!r})"


def new_send_result(  # noqa: PLR0917 - positional on the hot path, as SendResult's field order
    status: SendStatus,
    msg_id: str,
    offset_msg_id: str,
    queue: MessageQueue,
    queue_offset: int,
    transaction_id: str | None,
    region_id: str | None,
    recall_handle: str | None = None,
    trace_on: bool = True,
) -> SendResult:
    """``SendResult(...)`` for the send paths. A frozen class's ``__setattr__`` makes every
    field's store a call (``object.__setattr__`` in attrs' ``__init__``, or a slot's
    ``__set__``); a :class:`_Draft` has the same slots and Python's own store for them, and
    becomes a ``SendResult`` once filled (cheaper a result in benchmarks/abtest.py's
    pipelined and auto-batched paths). The caller has the values' types right; a test holds
    the two equal."""
    draft: Any = _new(_Draft)  # (its fields are read-only to mypy: SendResult's)
    draft.status = status
    draft.msg_id = msg_id
    draft.offset_msg_id = offset_msg_id
    draft.queue = queue
    draft.queue_offset = queue_offset
    draft.transaction_id = transaction_id
    draft.region_id = region_id
    draft.recall_handle = recall_handle
    draft.trace_on = trace_on
    draft.__class__ = SendResult
    return draft  # type: ignore[no-any-return]  # (a SendResult now: the line above)


class _Draft(SendResult):
    """A :class:`SendResult` being filled: its own class adds no slot (so ``__class__`` may
    become ``SendResult``) and has Python's own ``__setattr__``, which stores a slot in place
    (the frozen one is a call a field). Never seen outside this module."""

    __slots__ = ()
    __setattr__ = object.__setattr__
    __delattr__ = object.__delattr__


_new = object.__new__
