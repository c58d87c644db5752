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
from collections.abc import Iterator, Sequence
from concurrent.futures import CancelledError
from functools import partial

import anyio
import pyarrow as pa
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
PULLS_AHEAD = 4
STALL_RETRIES = 5  # pulls that make no progress before the rest of a range counts as lost
STALL_PAUSE = 0.2  # seconds, times the number of stalls so far


def record_batch(messages: Sequence[MessageExt]) -> pa.RecordBatch:
    """``messages`` as one record batch in :data:`ARROW_SCHEMA`, built column by column (one
    pass per column instead of twelve appends per message: benchmarks/spark.py)."""
    columns = [
        [m.topic for m in messages],
        [m.broker_name for m in messages],
        [m.queue_id for m in messages],
        [m.queue_offset for m in messages],
        [m.msg_id for m in messages],
        [m.keys for m in messages],
        [m.tags for m in messages],
        [[(k, v) for k, v in m.properties.items() if k not in RESERVED_PROPERTIES]
         for m in messages],
        [m.body for m in messages],
        [m.born_timestamp * 1000 for m in messages],  # ms -> the schema's microseconds
        [m.store_timestamp * 1000 for m in messages],
        [m.reconsume_times for m in messages],
    ]  # fmt: skip
    arrays = [pa.array(values, type=field.type)
              for values, field in zip(columns, ARROW_SCHEMA, strict=True)]  # fmt: skip
    return pa.RecordBatch.from_arrays(arrays, schema=ARROW_SCHEMA)


async def _pull_range(
    pulls: PullConsumer[bytes],
    options: SourceOptions,
    part: QueueRange,
    send: ObjectSendStream[list[MessageExt]],
) -> None:
    """Pull ``[part.start, part.end)`` into ``send``; a range retention deleted is
    :func:`~.offsets.lost` (an error or a warning)."""
    queue = MessageQueue(part.topic, part.broker_name, part.queue_id)
    unfiltered = options.expression == "*" and options.expression_type == "TAG"
    fail = options.fail_on_data_loss
    stalls = 0
    async with send:
        offset = part.start
        while offset < part.end:
            result = await pulls.pull(
                queue, offset, max_messages=min(options.pull_batch_size, part.end - offset),
                expression=options.expression, expression_type=options.expression_type,
            )  # fmt: skip
            moved_to = result.next_offset
            if result.status is PullStatus.FOUND and result.messages:
                first = result.messages[0].queue_offset
                if unfiltered and first > offset:
                    lost(queue, offset, min(first, part.end), fail=fail)
                await send.send([m for m in result.messages if m.queue_offset < part.end])
                offset, stalls = max(moved_to, result.messages[-1].queue_offset + 1), 0
            elif moved_to > offset:
                # no match under a filter is normal; without one, or an offset the broker
                # calls illegal, the offsets skipped were stored and are gone
                if unfiltered or result.status is PullStatus.OFFSET_ILLEGAL:
                    lost(queue, offset, min(moved_to, part.end), fail=fail)
                offset, stalls = moved_to, 0
            else:  # no progress: the broker's "try again" (a file being removed, a busy store)
                stalls += 1
                if stalls > STALL_RETRIES:  # the range was stored when it was planned
                    lost(queue, offset, part.end, fail=fail)
                    return
                await anyio.sleep(STALL_PAUSE * stalls)


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
