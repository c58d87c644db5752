"""The executor side of the ``rocketmq`` source: one offset range of one queue, pulled and
turned into Arrow record batches.

The pulls run ahead of the rows: a task in the event loop's thread pulls the next batch while
Spark's thread turns the last one into columns (a bounded stream between them, so a slow
consumer of rows holds the pulls back). The rows leave as ``pyarrow.RecordBatch`` in the
source's schema, which Spark takes as they are, instead of tuples it would convert one value
at a time (benchmarks/spark.py measures both read paths).
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Awaitable, Callable, Iterator, Sequence
from concurrent.futures import CancelledError
from functools import partial
from typing import Any

import anyio
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from anyio.abc import ObjectReceiveStream as MemoryObjectReceiveStream
from anyio.abc import ObjectSendStream
from anyio.from_thread import start_blocking_portal
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from rocketmq_actors.consumer.pull import PullConsumer, PullStatus
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.messages import RESERVED_PROPERTIES
from rocketmq_actors.protocol.records import MessageExt

from .offsets import QueueRange, lost
from .source_options import SourceOptions

__all__ = ["ARROW_SCHEMA", "READ_SCHEMA", "read_range"]

#: the rows the source reads (``DataSource.schema``)
READ_SCHEMA = StructType([
    StructField("topic", StringType()), StructField("broker_name", StringType()),
    StructField("queue_id", IntegerType()), StructField("queue_offset", LongType()),
    StructField("msg_id", StringType()), StructField("keys", ArrayType(StringType())),
    StructField("tags", StringType()),
    StructField("properties", MapType(StringType(), StringType())),
    StructField("body", BinaryType()), StructField("born_timestamp", TimestampType()),
    StructField("store_timestamp", TimestampType()), StructField("reconsume_times", IntegerType()),
])  # fmt: skip
#: what Spark expects record batches in (its own conversion of READ_SCHEMA)
ARROW_SCHEMA: pa.Schema = to_arrow_schema(READ_SCHEMA, timezone="UTC")

ROWS_PER_BATCH = 4096  # Spark's default spark.sql.execution.arrow.maxRecordsPerBatch is 10000
PULLS_AHEAD = 4  # pulled batches waiting for Spark's thread
PULLS_IN_FLIGHT = 4  # chunks of one range pulled at once
STALL_RETRIES = 5  # pulls that make no progress before the rest of a range counts as lost
STALL_PAUSE = 0.2  # seconds, times the number of stalls so far


def record_batch(messages: Sequence[MessageExt]) -> pa.RecordBatch:
    """``messages`` as one record batch in :data:`ARROW_SCHEMA`. The properties (and the
    keys, tags and message ids in them) are split by Arrow's compute functions over the whole
    batch (benchmarks/spark.py: the property columns were half the cost of a row); properties
    that are not UTF-8 take :func:`_python_property_columns`, message by message."""
    raw = pa.array([m.raw_properties for m in messages], pa.binary())
    try:
        msg_ids, keys, tags, properties = _arrow_property_columns(raw, messages)
    except pa.ArrowInvalid:  # not UTF-8: MessageExt.properties marks the message, not fails
        msg_ids, keys, tags, properties = _python_property_columns(messages)
    columns = [
        [m.topic for m in messages],
        [m.broker_name for m in messages],
        [m.queue_id for m in messages],
        [m.queue_offset for m in messages],
        msg_ids, keys, tags, properties,
        [m.body for m in messages],
        [m.born_timestamp * 1000 for m in messages],  # ms -> the schema's microseconds
        [m.store_timestamp * 1000 for m in messages],
        [m.reconsume_times for m in messages],
    ]  # fmt: skip
    arrays = [
        values.cast(field.type) if isinstance(values, pa.Array) else pa.array(values, field.type)
        for values, field in zip(columns, ARROW_SCHEMA, strict=True)
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=ARROW_SCHEMA)


def _python_property_columns(messages: Sequence[MessageExt]) -> list[list[Any]]:
    """Message ids, keys, tags and user properties as :class:`MessageExt` gives them."""
    return [
        [m.msg_id for m in messages],
        [m.keys for m in messages],
        [m.tags for m in messages],
        [[(k, v) for k, v in m.properties.items() if k not in RESERVED_PROPERTIES]
         for m in messages],
    ]  # fmt: skip


_RESERVED = pa.array(sorted(RESERVED_PROPERTIES), pa.string())


def _offsets(parents: pa.Array, rows: int) -> pa.Array:
    """List offsets for ``rows`` lists from the (ascending) row index of each value."""
    counts = np.bincount(parents.to_numpy(zero_copy_only=False), minlength=rows)
    offsets = np.zeros(rows + 1, dtype=np.int32)
    np.cumsum(counts, out=offsets[1:])
    return pa.array(offsets)


def _arrow_property_columns(raw: pa.Array, messages: Sequence[MessageExt]) -> list[Any]:
    """:func:`_python_property_columns` over the raw properties at once, with the rules of
    :func:`~rocketmq_actors.protocol.messages.decode_properties`: ``name\x01value\x02``
    segments split at the first ``\x01``, an empty name or value dropped, the last of a
    repeated name is its value (a repeated user property appears twice in the map)."""
    rows = len(raw)
    segments = pc.split_pattern(raw.cast(pa.string()), "\x02")
    parents = pc.list_parent_indices(segments)
    pairs = pc.split_pattern(segments.flatten(), "\x01", max_splits=1)
    whole = pc.equal(pc.list_value_length(pairs), 2)
    pairs, parents = pairs.filter(whole), parents.filter(whole)
    names, values = pc.list_element(pairs, 0), pc.list_element(pairs, 1)
    kept = pc.and_(pc.not_equal(names, ""), pc.not_equal(values, ""))
    names, values, parents = names.filter(kept), values.filter(kept), parents.filter(kept)
    every = pa.MapArray.from_arrays(_offsets(parents, rows), names, values)
    tags = pc.map_lookup(every, "TAGS", "last")
    words = pc.utf8_split_whitespace(pc.map_lookup(every, "KEYS", "last"))
    word_rows, flat = pc.list_parent_indices(words), words.flatten()
    spoken = pc.not_equal(flat, "")  # str.split() drops what leading whitespace leaves
    keys = pa.ListArray.from_arrays(_offsets(word_rows.filter(spoken), rows), flat.filter(spoken))
    user = pc.invert(pc.is_in(names, value_set=_RESERVED))
    properties = pa.MapArray.from_arrays(
        _offsets(parents.filter(user), rows), names.filter(user), values.filter(user)
    )
    uniq = pc.map_lookup(every, "UNIQ_KEY", "last")
    msg_ids: pa.Array | list[str] = uniq
    if uniq.null_count:  # no UNIQ_KEY: the offset message id
        msg_ids = [u or m.offset_msg_id for u, m in zip(uniq.to_pylist(), messages, strict=True)]
    return [msg_ids, keys, tags, properties]


Deliver = Callable[[list[MessageExt]], Awaitable[None]]


async def _pull_span(
    pulls: PullConsumer[bytes], options: SourceOptions, queue: MessageQueue,
    span: tuple[int, int], deliver: Deliver,
) -> None:  # fmt: skip
    """Pull offsets ``[start, end)`` (``span``) of ``queue`` into ``deliver``, one pull at a
    time; a range retention deleted is :func:`~.offsets.lost` (an error or a warning)."""
    start, end = span
    unfiltered = options.expression == "*" and options.expression_type == "TAG"
    fail = options.fail_on_data_loss
    stalls = 0
    offset = start
    while offset < end:
        result = await pulls.pull(
            queue, offset, max_messages=min(options.pull_batch_size, end - offset),
            expression=options.expression, expression_type=options.expression_type,
        )  # fmt: skip
        moved_to = result.next_offset
        if result.status is PullStatus.FOUND and result.messages:
            first = result.messages[0].queue_offset
            if unfiltered and first > offset:
                lost(queue, offset, min(first, end), fail=fail)
            await deliver([m for m in result.messages if m.queue_offset < end])
            offset, stalls = max(moved_to, result.messages[-1].queue_offset + 1), 0
        elif moved_to > offset:
            # no match under a filter is normal; without one, or an offset the broker
            # calls illegal, the offsets skipped were stored and are gone
            if unfiltered or result.status is PullStatus.OFFSET_ILLEGAL:
                lost(queue, offset, min(moved_to, end), fail=fail)
            offset, stalls = moved_to, 0
        else:  # no progress: the broker's "try again" (a file being removed, a busy store)
            stalls += 1
            if stalls > STALL_RETRIES:  # the range was stored when it was planned
                lost(queue, offset, end, fail=fail)
                return
            await anyio.sleep(STALL_PAUSE * stalls)


class _Chunk:
    """The messages of one chunk of a range, pulled by a task of their own."""

    def __init__(self) -> None:
        self.messages: list[MessageExt] = []
        self.error: Exception | None = None
        self.done = anyio.Event()

    async def fill(
        self, pulls: PullConsumer[bytes], options: SourceOptions, queue: MessageQueue,
        span: tuple[int, int],
    ) -> None:  # fmt: skip
        async def keep(messages: list[MessageExt]) -> None:
            self.messages += messages

        try:
            await _pull_span(pulls, options, queue, span, keep)
        except Exception as exc:  # raised in range order by the task that sends them on
            self.error = exc
        finally:
            self.done.set()

    async def result(self) -> list[MessageExt]:
        await self.done.wait()
        if self.error is not None:
            raise self.error
        return self.messages


async def _pull_range(
    pulls: PullConsumer[bytes],
    options: SourceOptions,
    part: QueueRange,
    send: ObjectSendStream[list[MessageExt]],
) -> None:
    """Pull ``[part.start, part.end)`` into ``send``, in offset order.

    Without a filter, queue offsets are consecutive, so the range is cut into chunks of
    ``pullBatchSize`` offsets and up to ``PULLS_IN_FLIGHT`` chunks are pulled at once: the
    broker reads the next ones while this process decodes the last (one pull at a time left
    this process waiting on the broker about half the time: benchmarks/spark.py). Under a
    filter a pull may skip far past its chunk, so the range is pulled in one span."""
    queue = MessageQueue(part.topic, part.broker_name, part.queue_id)
    async with send:
        if options.expression != "*" or options.expression_type != "TAG":
            await _pull_span(pulls, options, queue, (part.start, part.end), send.send)
            return
        pending: deque[_Chunk] = deque()

        async def send_first() -> Exception | None:
            try:
                await send.send(await pending.popleft().result())
            except Exception as exc:  # raised below, as itself, not in an exception group
                return exc
            return None

        error: Exception | None = None
        async with anyio.create_task_group() as tg:
            for begin in range(part.start, part.end, options.pull_batch_size):
                chunk = _Chunk()
                span = (begin, min(begin + options.pull_batch_size, part.end))
                tg.start_soon(chunk.fill, pulls, options, queue, span)
                pending.append(chunk)
                if len(pending) >= PULLS_IN_FLIGHT and (error := await send_first()):
                    break
            while pending and error is None:
                error = await send_first()
            tg.cancel_scope.cancel()  # (on an error: the chunks after it)
        if error is not None:
            raise error


async def _next_batch(
    receive: MemoryObjectReceiveStream[list[MessageExt]],
) -> pa.RecordBatch | None:
    """Up to ``ROWS_PER_BATCH`` pulled messages as one record batch; None at the end. Runs in
    the event loop's thread, beside the pulls: one hand-over to Spark's thread per batch, not
    one per pull (two CPU-bound threads trade the GIL only every switch interval)."""
    gathered: list[MessageExt] = []
    while len(gathered) < ROWS_PER_BATCH:
        try:
            gathered += await receive.receive()
        except anyio.EndOfStream:
            break
    return record_batch(gathered) if gathered else None


def read_range(options: SourceOptions, part: QueueRange) -> Iterator[pa.RecordBatch]:
    """The messages of one queue range as record batches of up to ``ROWS_PER_BATCH`` rows."""
    consumer = partial(PullConsumer, namesrv=options.namesrv, group=options.group,
                       namespace=options.namespace, **options.client_options())  # fmt: skip
    send, receive = anyio.create_memory_object_stream[list[MessageExt]](PULLS_AHEAD)
    with (
        start_blocking_portal("asyncio") as portal,
        portal.wrap_async_context_manager(portal.call(consumer)) as pulls,
    ):
        pulling = portal.start_task_soon(_pull_range, pulls, options, part, send)
        try:
            while (batch := portal.call(_next_batch, receive)) is not None:
                yield batch
            pulling.result()  # a DataLost or a pull's error, raised here
        finally:
            if not pulling.done():  # Spark stopped reading early (a LIMIT, a failed task)
                pulling.cancel()
                with contextlib.suppress(CancelledError):
                    pulling.result()
            portal.call(receive.aclose)
