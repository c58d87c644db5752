"""The executor side of the ``rocketmq`` source: one offset range of one queue, pulled and
turned into Arrow record batches.

The pulls run ahead of the rows: a task in the event loop's thread pulls the next batch while
Spark's thread turns the last one into columns (a bounded stream between them, so a slow
consumer of rows holds the pulls back). The rows leave as ``pyarrow.RecordBatch`` in the
source's schema, which Spark takes as they are, instead of tuples it would convert one value
at a time (benchmarks/spark.py measures both read paths).
"""

from __future__ import annotations

import bisect
import contextlib
from collections import deque
from collections.abc import Awaitable, Callable, Generator, Iterator, Sequence
from concurrent.futures import CancelledError
from functools import partial
from typing import Any

import anyio
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from anyio.abc import ObjectReceiveStream as MemoryObjectReceiveStream
from anyio.abc import ObjectSendStream
from anyio.from_thread import BlockingPortal, start_blocking_portal
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

from rocketmq_actors.cluster.options import ClientOptions
from rocketmq_actors.consumer.pull import PullStatus
from rocketmq_actors.consumer.pull.group import PullGroup
from rocketmq_actors.errors import RocketMQError
from rocketmq_actors.logs import get_logger
from rocketmq_actors.names import unwrap
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.messages import (
    RESERVED_PROPERTIES,
    Property,
    decode_properties,
    keys_of,
    user_properties,
)
from rocketmq_actors.protocol.recordcolumns import RecordColumns, decode_columns

from .offsets import QueueRange, lost
from .source_options import SourceOptions

__all__ = [
    "ARROW_SCHEMA",
    "READ_SCHEMA",
    "columns_batch",
    "read_ranges",
]

log = get_logger("rocketmq_actors.spark")

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
CHUNKS_AHEAD = 4  # pulled chunks waiting to be made into the next record batch
PULLS_IN_FLIGHT = 4  # chunks of one range pulled at once
CHUNK_PULLS = 16  # pulls' worth of offsets in a chunk, at most (see _chunk_size)
STALL_RETRIES = 5  # pulls that make no progress before the rest of a range counts as lost
STALL_PAUSE = 0.2  # seconds, times the number of stalls so far
RETRY_PAUSE = 0.2  # seconds before a pull its broker did not answer is tried again; doubled
RETRY_PAUSE_MAX = 2.0  # up to this


def columns_batch(columns: RecordColumns, topic: str, broker_name: str) -> pa.RecordBatch:
    """The records of one queue of ``topic`` on ``broker_name`` as one record batch in
    :data:`ARROW_SCHEMA`. The properties (and the keys, tags and message ids in them) are
    split by Arrow's compute functions over the whole batch (benchmarks/spark.py measured the
    property columns as the larger part of a row's cost); properties that are not UTF-8 take
    :func:`_python_property_columns`, row by row."""
    rows = len(columns)
    raw = pa.array(columns.raw_properties, pa.binary())
    try:
        msg_ids, keys, tags, properties = _arrow_property_columns(raw, columns)
    except pa.ArrowInvalid:  # not UTF-8: read with replacement characters, never failed
        msg_ids, keys, tags, properties = _python_property_columns(columns)
    born, stored = (pc.multiply_checked(pa.array(ms, pa.int64()), 1000)  # ms -> microseconds
                    for ms in (columns.born_timestamps, columns.store_timestamps))  # fmt: skip
    values = [
        pa.repeat(topic, rows), pa.repeat(broker_name, rows), columns.queue_ids,
        columns.queue_offsets,
        msg_ids, keys, tags, properties, columns.bodies, born, stored, columns.reconsume_times,
    ]  # fmt: skip
    arrays = [  # each column in the schema's type, whatever it was built as
        column.cast(field.type) if isinstance(column, pa.Array) else pa.array(column, field.type)
        for column, field in zip(values, ARROW_SCHEMA, strict=True)
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=ARROW_SCHEMA)


def _python_property_columns(columns: RecordColumns) -> list[list[Any]]:
    """Message ids, keys, tags and user properties as :class:`MessageExt` reads them (bytes
    that are not UTF-8 as replacement characters)."""
    msg_ids: list[str] = []
    keys: list[list[str]] = []
    tags: list[str | None] = []
    users: list[list[tuple[str, str]]] = []
    for row, raw in enumerate(columns.raw_properties):
        props = decode_properties(raw.decode(errors="replace"))
        msg_ids.append(props.get(Property.UNIQ_KEY) or columns.offset_msg_id(row))
        keys.append(keys_of(props))
        tags.append(props.get(Property.TAGS))
        users.append(list(user_properties(props).items()))
    return [msg_ids, keys, tags, users]


_RESERVED = pa.array(sorted(RESERVED_PROPERTIES), pa.string())


def _offsets(parents: pa.Array, rows: int) -> pa.Array:
    """List offsets for ``rows`` lists from the (ascending) row index of each value."""
    counts = np.bincount(parents.to_numpy(zero_copy_only=False), minlength=rows)
    offsets = np.zeros(rows + 1, dtype=np.int32)
    np.cumsum(counts, out=offsets[1:])
    return pa.array(offsets)


def _arrow_property_columns(raw: pa.Array, columns: RecordColumns) -> list[Any]:
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
        msg_ids = [u or columns.offset_msg_id(row) for row, u in enumerate(uniq.to_pylist())]
    return [msg_ids, keys, tags, properties]


Deliver = Callable[[RecordColumns], Awaitable[None]]


async def _pull(
    pulls: PullGroup, options: SourceOptions, queue: MessageQueue, offset: int,
    count: int,
) -> tuple[PullStatus, int, RecordColumns]:  # fmt: skip
    """One pull (:func:`_pull_once`), tried again while its broker does not answer (killed,
    restarting, gone from the route for now), for at most ``pullRetryTimeoutMs``; then the
    last error fails the task, and Spark runs it again as ``spark.task.maxFailures`` allows.
    The range is never cut short: its end is in the query's checkpoint already, and the next
    trigger starts there, so the offsets left would be skipped."""
    deadline = anyio.current_time() + options.pull_retry_timeout
    pause = RETRY_PAUSE
    while True:
        try:
            return await _pull_once(pulls, options, queue, offset, count)
        except RocketMQError as exc:
            if not exc.retriable or anyio.current_time() + pause >= deadline:
                raise
            log.warning("spark.pull_retry", topic=queue.topic, broker=queue.broker_name,
                        queue_id=queue.queue_id, offset=offset, error=repr(exc))  # fmt: skip
        await anyio.sleep(pause)
        pause = min(pause * 2, RETRY_PAUSE_MAX)


async def _pull_once(
    pulls: PullGroup, options: SourceOptions, queue: MessageQueue, offset: int,
    count: int,
) -> tuple[PullStatus, int, RecordColumns]:  # fmt: skip
    """One pull: its status, the next offset and its records as columns. Without a filter the
    records are never decoded into messages (benchmarks/spark.py)."""
    if options.unfiltered:
        raw = await pulls.pull_raw(queue, offset, max_messages=count)
        return raw.status, raw.next_offset, decode_columns(raw.body)  # (empty unless FOUND)
    result = await pulls.pull(
        queue, offset, max_messages=count, expression=options.expression,
        expression_type=options.expression_type,
    )  # fmt: skip
    rows = RecordColumns()
    rows.add_messages(result.messages)
    return result.status, result.next_offset, rows


async def _pull_span(
    pulls: PullGroup, options: SourceOptions, queue: MessageQueue,
    span: tuple[int, int], deliver: Deliver,
) -> None:  # fmt: skip
    """Pull offsets ``[start, end)`` (``span``) of ``queue`` into ``deliver``, one pull at a
    time; a range retention deleted is :func:`~.offsets.lost` (an error or a warning)."""
    start, end = span
    unfiltered = options.unfiltered
    fail = options.fail_on_data_loss
    stalls = 0
    offset = start
    while offset < end:
        status, moved_to, rows = await _pull(
            pulls, options, queue, offset, min(options.pull_batch_size, end - offset)
        )
        if status is PullStatus.FOUND and rows:
            offsets = rows.queue_offsets  # (ascending)
            first, last = offsets[0], offsets[-1]
            if unfiltered and first > offset:
                lost(queue, offset, min(first, end), fail=fail)
            if last >= end:
                rows.truncate(bisect.bisect_left(offsets, end))
            await deliver(rows)
            offset, stalls = max(moved_to, last + 1), 0
        elif moved_to > offset:
            # no match under a filter is normal; without one, or an offset the broker
            # calls illegal, the offsets skipped were stored and are gone
            if unfiltered or status is PullStatus.OFFSET_ILLEGAL:
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
        self.parts: list[RecordColumns] = []  # (a pull's rows each)
        self.error: Exception | None = None
        self.done = anyio.Event()

    async def fill(
        self, pulls: PullGroup, options: SourceOptions, queue: MessageQueue,
        span: tuple[int, int],
    ) -> None:  # fmt: skip
        async def keep(rows: RecordColumns) -> None:
            self.parts.append(rows)

        try:
            await _pull_span(pulls, options, queue, span, keep)
        except Exception as exc:  # raised in range order by the task that sends them on
            self.error = exc
        finally:
            self.done.set()

    async def result(self) -> list[RecordColumns]:
        await self.done.wait()
        if self.error is not None:
            raise self.error
        return self.parts


def _chunk_size(pull_batch_size: int, offsets: int) -> int:
    """Offsets in each chunk of a range of ``offsets``: ``CHUNK_PULLS`` pulls' worth, fewer
    when the chunks pulled at once would hold more than a record batch (a large
    ``pullBatchSize``: what a task reads ahead stays bounded), and fewer when the range is too
    short for ``PULLS_IN_FLIGHT`` chunks of that size (it is still pulled by several at once).
    Longer chunks cost this process less CPU per message than chunks of one pull
    (benchmarks/spark.py, ``source_code_by_chunk_pulls``: the source's code alone, both
    ways, alternated)."""
    most = min(CHUNK_PULLS, ROWS_PER_BATCH // (pull_batch_size * PULLS_IN_FLIGHT))
    pulls = -(-offsets // (pull_batch_size * PULLS_IN_FLIGHT))  # (rounded up)
    return pull_batch_size * max(1, min(most, pulls))


async def _pull_range(
    pulls: PullGroup,
    options: SourceOptions,
    part: QueueRange,
    send: ObjectSendStream[list[RecordColumns]],
) -> None:
    """Pull ``[part.start, part.end)`` into ``send``, in offset order.

    Without a filter, queue offsets are consecutive, so the range is cut into chunks
    (:func:`_chunk_size`) and up to ``PULLS_IN_FLIGHT`` chunks are pulled at once, each by a
    task pulling one pull after another: the broker reads the next ones while this process
    decodes the last (one pull at a time left this process waiting on the broker:
    benchmarks/spark.py). Under a filter a pull may skip far past its chunk, so the
    range is pulled in one span."""
    queue = MessageQueue(part.topic, part.broker_name, part.queue_id)
    async with send:
        if not options.unfiltered:

            async def deliver(rows: RecordColumns) -> None:
                await send.send([rows])

            await _pull_span(pulls, options, queue, (part.start, part.end), deliver)
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
            size = _chunk_size(options.pull_batch_size, part.end - part.start)
            for begin in range(part.start, part.end, size):
                chunk = _Chunk()
                span = (begin, min(begin + size, part.end))
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
    receive: MemoryObjectReceiveStream[list[RecordColumns]], topic: str, broker_name: str
) -> pa.RecordBatch | None:
    """``ROWS_PER_BATCH`` pulled records or more (whole chunks: up to a chunk more; fewer at
    the end of a range) as one record batch; None at the end. Runs in the event loop's
    thread, beside the pulls: one hand-over to Spark's thread per batch, not one per pull
    (two CPU-bound threads trade the GIL only every switch interval)."""
    gathered: list[RecordColumns] = []
    rows = 0
    while rows < ROWS_PER_BATCH:
        try:
            parts = await receive.receive()
        except anyio.EndOfStream:
            break
        gathered += parts
        rows += sum(map(len, parts))
    return columns_batch(RecordColumns.joined(gathered), topic, broker_name) if rows else None


def read_ranges(options: SourceOptions, parts: Sequence[QueueRange]) -> Iterator[pa.RecordBatch]:
    """The messages of queue ranges, one range after another, as record batches of about
    ``ROWS_PER_BATCH`` rows (:func:`_next_batch`; one client for them all). A range's task
    reads ahead of Spark by at most ``PULLS_IN_FLIGHT`` chunks being pulled and
    ``CHUNKS_AHEAD`` pulled, besides the batch being made."""
    # the consumer's actor group itself: pulls by hand, raw ones included (PullGroup.pull_raw)
    client = ClientOptions(namespace=options.namespace, **options.client_options())
    consumer = partial(PullGroup, namesrv=options.namesrv, group=options.group, client=client)
    with (
        start_blocking_portal("asyncio") as portal,
        portal.wrap_async_context_manager(portal.call(consumer)) as pulls,
    ):
        for part in parts:
            yield from _read_one(portal, pulls, options, part)


def _read_one(
    portal: BlockingPortal, pulls: PullGroup, options: SourceOptions, part: QueueRange
) -> Generator[pa.RecordBatch, None, None]:
    send, receive = anyio.create_memory_object_stream[list[RecordColumns]](CHUNKS_AHEAD)
    pulling = portal.start_task_soon(_pull_range, pulls, options, part, send)
    topic = unwrap(options.namespace, part.topic)  # (the plan's names are the wire's)
    try:
        while (batch := portal.call(_next_batch, receive, topic, part.broker_name)) is not None:
            yield batch
        pulling.result()  # a DataLost or a pull's error, raised here
    finally:
        if not pulling.done():  # Spark stopped reading early (a LIMIT, a failed task)
            pulling.cancel()
            with contextlib.suppress(CancelledError):
                pulling.result()
        portal.call(receive.aclose)
