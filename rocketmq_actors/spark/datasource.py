"""The ``rocketmq`` Spark 4 Python data source.

    from rocketmq_actors.spark import register
    register(spark)
    df.write.format("rocketmq").option("namesrv", "127.0.0.1:9876") \\
        .option("topic", "orders").mode("append").save()
    query = stream.writeStream.format("rocketmq").option("namesrv", ...) \\
        .option("checkpointLocation", "/tmp/ck").start()
    spark.read.format("rocketmq").option("namesrv", ...).option("topic", "orders").load()
    spark.readStream.format("rocketmq").option("namesrv", ...).option("topics", "a,b").load()

Writes run on the executors, one :class:`~rocketmq_actors.blocking.BlockingProducer` per task;
each task's commit message carries its counts (sent, failed, first errors) back to the
driver, which logs the totals (``spark.sink_committed``). Options and columns are checked on
the driver when the write is planned, before any task runs (``OptionError``, ``ColumnError``).

Delivery is **at-least-once**: with ``failOnError`` (the default) a task whose sends failed
fails after sending what it could, and Spark runs it again - the partition's messages that
did get through are sent twice. Give messages a ``keys`` column (an id stable across runs) and
de-duplicate downstream by key. A failed job (``abort``) does not take back what was sent.

Reads (batch and streaming) are in :mod:`.reader`: per-queue offset ranges planned on the
driver, pulled on the executors; a streaming query keeps its offsets in Spark's checkpoint.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import attrs
import structlog
from pyspark import TaskContext
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import Row, StructType

from rocketmq_actors.blocking import BlockingProducer
from rocketmq_actors.errors import RocketMQError
from rocketmq_actors.logs import configure_logging, get_logger

from .columns import plan_rows
from .options import SinkOptions
from .probe import probe_namesrv
from .pulling import READ_SCHEMA
from .reader import RocketMQReader, RocketMQStreamReader
from .sink import publish_rows

__all__ = ["RocketMQDataSource", "SinkError"]

log = get_logger("rocketmq_actors.spark")


class SinkError(RocketMQError, RuntimeError):
    """A write task could not send all its messages (it fails, so that Spark retries it)."""


@attrs.define
class RocketMQCommitMessage(WriterCommitMessage):
    partition_id: int
    attempt: int
    sent: int
    failed: int
    errors: list[str]


class RocketMQDataSource(DataSource):
    """The ``rocketmq`` data source of PySpark's Python Data Source API: batch and streaming
    reads and writes (docs/spark.md); Spark calls its methods."""

    #: the registering session's default parallelism (:func:`for_session`): how the reads
    #: pack small queue ranges into partitions; None (this class as it is): no packing
    cores: int | None = None

    @classmethod
    def name(cls) -> str:
        return "rocketmq"

    @classmethod
    def for_session(cls, cores: int) -> type[RocketMQDataSource]:
        """This source for a session of ``cores`` default parallelism. The planner runs in a
        Python process of Spark's own, with no SparkContext to ask; a class made here is
        pickled whole, so the figure travels with it."""
        return type(cls.__name__, (cls,), {"cores": cores, "__module__": cls.__module__})

    def schema(self) -> StructType:
        return READ_SCHEMA

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        return RocketMQWriter(dict(self.options), schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        return RocketMQStreamWriter(dict(self.options), schema)

    def reader(self, schema: StructType) -> DataSourceReader:
        return RocketMQReader(dict(self.options), self.cores)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return RocketMQStreamReader(dict(self.options), self.cores)


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
