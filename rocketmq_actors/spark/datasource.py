"""The ``rocketmq`` Spark 4 Python data source.

    from rocketmq_actors.spark import register
    register(spark)
    df.write.format("rocketmq").option("namesrv", "127.0.0.1:9876") \\
        .option("topic", "orders").mode("append").save()
    query = stream.writeStream.format("rocketmq").option("namesrv", ...) \\
        .option("checkpointLocation", "/tmp/ck").start()
    spark.read.format("rocketmq").option("namesrv", ...).option("topic", "orders").load()

Writes run on the executors, one :class:`~rocketmq_actors.blocking.BlockingProducer` per task;
each task's commit message carries its counts (sent, failed, first errors) back to the
driver, which logs the totals (``spark.sink_committed``). Options and columns are checked on
the driver when the write is planned, before any task runs (``OptionError``, ``ColumnError``).

Delivery is **at-least-once**: with ``failOnError`` (the default) a task whose sends failed
fails after sending what it could, and Spark runs it again - the partition's messages that
did get through are sent twice. Give messages a ``keys`` column (an id stable across runs) and
de-duplicate downstream by key. A failed job (``abort``) does not take back what was sent.

Batch reads: one Spark partition per queue, from the queue's first to its last stored offset
when the read is planned (``startingOffsets``/``endingOffsets``: ``earliest``/``latest``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Sequence
from functools import partial
from typing import Any

import anyio
import attrs
import structlog
from anyio.from_thread import start_blocking_portal
from pyspark import TaskContext
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.types import Row, StructType

from rocketmq_actors.blocking import BlockingProducer
from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.cluster.namesrv import parse_namesrv
from rocketmq_actors.consumer.pull import PullConsumer, PullStatus, max_offset, min_offset
from rocketmq_actors.logs import configure_logging, get_logger
from rocketmq_actors.names import validate_topic
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.messages import RESERVED_PROPERTIES
from rocketmq_actors.protocol.records import MessageExt

from .columns import plan_rows
from .options import OptionError, SinkOptions
from .probe import probe_namesrv
from .sink import publish_rows

__all__ = ["RocketMQDataSource", "SinkError"]

log = get_logger("rocketmq_actors.spark")

READ_SCHEMA = (
    "topic string, broker_name string, queue_id int, queue_offset long, msg_id string, "
    "keys array<string>, tags string, properties map<string,string>, body binary, "
    "born_timestamp timestamp, store_timestamp timestamp, reconsume_times int"
)


class SinkError(RuntimeError):
    """A write task could not send all its messages (it fails, so that Spark retries it)."""


@attrs.define
class RocketMQCommitMessage(WriterCommitMessage):
    partition_id: int
    attempt: int
    sent: int
    failed: int
    errors: list[str]


class RocketMQDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "rocketmq"

    def schema(self) -> str:
        return READ_SCHEMA

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        return RocketMQWriter(dict(self.options), schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        return RocketMQStreamWriter(dict(self.options), schema)

    def reader(self, schema: StructType) -> DataSourceReader:
        return RocketMQReader(dict(self.options))


class RocketMQWriter(DataSourceWriter):
    def __init__(self, options: dict[str, str], schema: StructType) -> None:
        # on the driver, when the write is planned: bad options or columns stop it here
        self.settings = SinkOptions.parse(options)
        self.plan = plan_rows(schema, self.settings.topic,
                              ignore_extra=self.settings.ignore_extra_columns)  # fmt: skip
        probe_namesrv(self.settings.namesrv, ssl_context=self.settings.ssl_context())

    def write(self, iterator: Iterator[Row]) -> RocketMQCommitMessage:
        _quiet_worker_logs(self.settings.log_level)
        context = TaskContext.get()
        partition = context.partitionId() if context else -1
        attempt = context.attemptNumber() if context else 0
        with BlockingProducer(**self.settings.producer_options()) as producer:
            summary = publish_rows(
                iterator, self.plan, producer, chunk_size=self.settings.chunk_size,
                max_chunks=self.settings.max_chunks, batch_size=self.settings.batch_size,
            )  # fmt: skip
        log.info("spark.task_published", partition=partition, attempt=attempt,
                 sent=summary.sent, failed=summary.failed)  # fmt: skip
        if summary.failed and self.settings.fail_on_error:
            raise SinkError(
                f"partition {partition} (attempt {attempt}): {summary.failed} message(s) failed, "
                f"{summary.sent} sent; first errors: {summary.errors[:3]}"
            )
        return RocketMQCommitMessage(partition, attempt, summary.sent, summary.failed,
                                     summary.errors[:20])  # fmt: skip

    @staticmethod
    def _totals(messages: Sequence[WriterCommitMessage | None]) -> dict[str, int]:
        ours = [m for m in messages if isinstance(m, RocketMQCommitMessage)]
        return {"tasks": len(ours), "sent": sum(m.sent for m in ours),
                "failed": sum(m.failed for m in ours)}  # fmt: skip

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        _quiet_worker_logs(self.settings.log_level)
        log.info("spark.sink_committed", **self._totals(messages))

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        _quiet_worker_logs(self.settings.log_level)
        # what the finished tasks sent stays sent: at-least-once, de-duplicate by key
        log.warning("spark.sink_aborted", **self._totals(messages))


class RocketMQStreamWriter(RocketMQWriter, DataSourceStreamWriter):
    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # type: ignore[override]
        _quiet_worker_logs(self.settings.log_level)
        log.info("spark.sink_committed", batch=batchId, **self._totals(messages))

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # type: ignore[override]
        _quiet_worker_logs(self.settings.log_level)
        log.warning("spark.sink_aborted", batch=batchId, **self._totals(messages))


def _quiet_worker_logs(level: str) -> None:
    """An executor's Python worker is not the user's program: unless it configured structlog,
    log at ``level`` (the ``logLevel`` option, WARNING by default) to stderr."""
    if not structlog.is_configured():
        configure_logging(level=level)


# ---- batch reads ---------------------------------------------------------------------------


@attrs.frozen
class QueueRange(InputPartition):
    topic: str
    broker_name: str
    queue_id: int
    start: int
    end: int


def _read_settings(options: dict[str, str]) -> tuple[str, str, str, str]:
    lowered = {k.lower(): v for k, v in options.items()}
    namesrv, topic = lowered.get("namesrv"), lowered.get("topic")
    if not namesrv or not topic:
        raise OptionError("reading needs the options 'namesrv' and 'topic'")
    parse_namesrv(namesrv)
    validate_topic(topic)
    start = lowered.get("startingoffsets", "earliest")
    end = lowered.get("endingoffsets", "latest")
    for name, value in (("startingOffsets", start), ("endingOffsets", end)):
        if value not in ("earliest", "latest"):
            raise OptionError(f"option {name!r} must be earliest or latest, not {value!r}")
    return namesrv, topic, start, end


class RocketMQReader(DataSourceReader):
    def __init__(self, options: dict[str, str]) -> None:
        self.namesrv, self.topic, self.start, self.end = _read_settings(options)
        self.group = options.get("group") or "rocketmq_actors_spark_reader"

    def partitions(self) -> Sequence[QueueRange]:
        async def plan() -> list[QueueRange]:
            async with ClientInstance(self.namesrv) as instance:
                route = await instance.routes.get(self.topic)
                ranges = []
                for queue in route.subscribe_queues:
                    low, high = await min_offset(instance, queue), await max_offset(instance, queue)
                    start = low if self.start == "earliest" else high
                    end = high if self.end == "latest" else low
                    if end > start:
                        ranges.append(QueueRange(queue.topic, queue.broker_name, queue.queue_id,
                                                 start, end))  # fmt: skip
                return ranges

        return anyio.run(plan)

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        assert isinstance(partition, QueueRange)
        queue = MessageQueue(partition.topic, partition.broker_name, partition.queue_id)
        with (
            start_blocking_portal("asyncio") as portal,
            portal.wrap_async_context_manager(
                portal.call(lambda: PullConsumer(namesrv=self.namesrv, group=self.group))
            ) as consumer,
        ):
            offset = partition.start
            while offset < partition.end:
                result = portal.call(partial(consumer.pull, queue, offset, max_messages=64))
                if result.status is not PullStatus.FOUND and result.next_offset <= offset:
                    break  # nothing more (e.g. deleted by retention)
                for message in result.messages:
                    if message.queue_offset < partition.end:
                        yield _row(message)
                offset = result.next_offset


def _row(message: MessageExt) -> tuple[Any, ...]:
    def ts(ms: int) -> dt.datetime:
        return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)

    user = {k: v for k, v in message.properties.items() if k not in RESERVED_PROPERTIES}
    return (
        message.topic, message.broker_name, message.queue_id, message.queue_offset,
        message.msg_id, message.keys, message.tags, user, message.body,
        ts(message.born_timestamp), ts(message.store_timestamp), message.reconsume_times,
    )  # fmt: skip
