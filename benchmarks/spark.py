"""Rows per second published from and read into PySpark.

    python -m benchmarks.spark [--rows 300000] [--partitions 4]

A DataFrame of ``--rows`` rows (a 256-byte body, a key and a tag per row) in ``--partitions``
partitions, Spark in local mode with 2 worker threads: (a) ``publish_dataframe`` from the
driver; (b) ``df.write.format("rocketmq")`` from the executors. The DataFrame is cached and
counted first so that both paths time publishing, not generating rows; the Spark session's start
is not timed. Then the topic (b) wrote, 8 queues, is read back: (c) by one ``PullConsumer`` in
one process, pulling every queue in turn (the single-process rate); (d) by a Spark batch read,
counted, with the source's default partitions (small queue ranges packed together,
``minOffsetsPerPartition``); (c) and (d) run in ABBA order (pull, read, read, pull: the broker
is still indexing what (b) wrote when the first one starts) and each figure is the mean of its
two runs; (d') the same read with one partition per queue (``minOffsetsPerPartition`` 0, as
Kafka's source), what packing moves; (d'') the batch read into Spark's ``noop`` sink, the
streaming query's sink (``count()`` needs no column, the sink iterates every row): (d'') and (e)
ask Spark for the same work; (e) by a streaming query with Trigger.AvailableNow into Spark's
``noop`` sink, after one untimed read that starts Spark's Python workers, twice (the mean; timed
whole, and its triggers alone: the rate a long-running query sees; each run's triggers' time by
phase, as Spark reports it); (f) by the source's executor code alone (``read_ranges``, the
record batches Spark is given) in this process, without Spark: what is left between (f) and (d)
is Spark's (the batches' way to the JVM, its rows); (g) what a task costs in Spark's Python data
source path itself, with a source that yields one row per partition (8 partitions against 1);
(h) on one core, the batch read with ``minOffsetsPerPartition`` at 100000 and at its default,
alternated (what fewer, larger tasks save); (i) on one core, (f) with chunks of one pull's worth
of offsets and of the default, alternated (what longer chunks save this process). (c), (d) and
(d'') also give the CPU spent per message by each process: this one, the Spark JVM and Spark's
Python workers, and (f) this process's (where a read's time goes: waiting on the broker, or a
process busy).
(c)-(g) are measured twice, in the same run: with local[2] (rates also given per Spark core)
and, in a second Spark session, with local[1]: one executor core, the rate to set beside (c) as
issue 25 asks (the source should reach at least the single-process rate per executor core). On
a 2-core machine local[2] shares its cores with the broker, so its per-core figures understate
a core's rate. Starts its own local RocketMQ cluster.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import anyio
import attrs
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from rocketmq_actors.consumer.pull import PullConsumer
from rocketmq_actors.producer import Producer, create_topic
from rocketmq_actors.spark import publish_dataframe, pulling, register
from rocketmq_actors.spark.offsets import QueueRange
from rocketmq_actors.spark.pulling import read_ranges
from rocketmq_actors.spark.source_options import MIN_OFFSETS_PER_PARTITION, SourceOptions

from .common import (
    RESULTS,
    alternating,
    on_cluster,
    process_cpu_s,
    process_tree,
    run_main,
    write_results,
)

T = TypeVar("T")


def _topic(namesrv: str, name: str) -> str:
    async def create() -> None:
        async with Producer(namesrv=namesrv, group="bench_spark_admin") as producer:
            await create_topic(producer.instance, name, queues=8)

    anyio.run(create)
    return name


def _pull_all(namesrv: str, topic: str) -> tuple[int, float]:
    """Every message of ``topic`` read by one PullConsumer, queue after queue, 64 a pull."""

    async def run() -> tuple[int, float]:
        async with PullConsumer(namesrv=namesrv, group="bench_spark_pull") as consumer:
            queues = await consumer.queues(topic)
            ends = {q: await consumer.max_offset(q) for q in queues}
            count = 0
            began = time.perf_counter()
            for queue in queues:
                offset = 0
                while offset < ends[queue]:
                    result = await consumer.pull(queue, offset, max_messages=64)
                    count += len(result.messages)
                    offset = result.next_offset
            return count, time.perf_counter() - began

    return anyio.run(run)


def _source_alone(namesrv: str, topic: str) -> tuple[int, float, float]:
    """Every message of ``topic`` through the source's executor code (``read_ranges``, the
    record batches Spark would be given) in this process, queue after queue with one client
    (as the single-process pull), without Spark: messages, seconds and this process's CPU
    seconds."""

    async def plan() -> list[QueueRange]:
        async with PullConsumer(namesrv=namesrv, group="bench_spark_alone") as consumer:
            return [QueueRange(q.topic, q.broker_name, q.queue_id, 0, await consumer.max_offset(q))
                    for q in await consumer.queues(topic)]  # fmt: skip

    parts = anyio.run(plan)
    options = SourceOptions.parse({"namesrv": namesrv, "topic": topic}, streaming=False)
    began, cpu = time.perf_counter(), time.process_time()
    count = sum(batch.num_rows for batch in read_ranges(options, parts))
    return count, time.perf_counter() - began, time.process_time() - cpu


def _batch_read(
    spark: SparkSession, source: dict[str, str], *, partitions: bool = False
) -> tuple[int, float, int | None]:
    """One timed batch read, counted: rows, seconds and, when asked, Spark's partitions (the
    read planned again: the source asks the broker for offsets)."""
    frame = spark.read.format("rocketmq").options(**source).load()
    began = time.perf_counter()
    count = frame.count()
    seconds = time.perf_counter() - began
    return count, seconds, frame.rdd.getNumPartitions() if partitions else None


@attrs.frozen
class _StreamRun:
    """One streaming query: ``in_triggers_s`` leaves out the query's start (checkpoint,
    planner client), which a long-running query pays once."""

    rows: int
    seconds: float  # the whole query, from its start
    in_triggers_s: float
    triggers: int
    ms_by_phase: dict[str, int]  # where the triggers' time went, as Spark reports it


def _stream_read(spark: SparkSession, source: dict[str, str]) -> _StreamRun:
    """One streaming query, Trigger.AvailableNow, into the ``noop`` sink (a new checkpoint)."""
    began = time.perf_counter()
    query = (
        spark.readStream.format("rocketmq").options(**source).load().writeStream.format("noop")
        .trigger(availableNow=True).start()
    )  # fmt: skip
    query.awaitTermination()
    seconds = time.perf_counter() - began
    progress = query.recentProgress
    phases: dict[str, int] = {}
    for each in progress:
        for phase, ms in each["durationMs"].items():
            if phase != "triggerExecution":
                phases[phase] = phases.get(phase, 0) + ms
    return _StreamRun(
        rows=sum(p["numInputRows"] for p in progress), seconds=seconds,
        in_triggers_s=sum(p["durationMs"].get("triggerExecution", 0) for p in progress) / 1000,
        triggers=len(progress), ms_by_phase=dict(sorted(phases.items())),
    )  # fmt: skip


def _packing(
    spark: SparkSession, source: dict[str, str], rows: int, rounds: int = 4
) -> dict[str, Any]:
    """The batch read with two ``minOffsetsPerPartition`` values, alternated (ABBA), median
    seconds each: what fewer, larger tasks save (the default's reason, source_options.py)."""
    assert rounds % 2 == 0 and MIN_OFFSETS_PER_PARTITION != 100_000
    sizes = ("100000", str(MIN_OFFSETS_PER_PARTITION))
    seconds: dict[str, list[float]] = {size: [] for size in sizes}
    parts: dict[str, int | None] = {}
    for size in alternating(rounds, *sizes):
        read, took, planned = _batch_read(spark, {**source, "minOffsetsPerPartition": size},
                                          partitions=size not in parts)  # fmt: skip
        assert read == rows, (size, read, rows)
        parts.setdefault(size, planned)
        seconds[size].append(round(took, 3))
    return {
        size: {"partitions": parts[size], "seconds_each": seconds[size],
               "seconds_median": round(statistics.median(seconds[size]), 3)}
        for size in sizes
    }  # fmt: skip


def _chunking(namesrv: str, topic: str, rows: int, rounds: int = 4) -> dict[str, Any]:
    """The source's executor code alone with chunks of one pull's worth of offsets and of
    ``CHUNK_PULLS`` pulls' worth, alternated (ABBA): the medians of msgs/s and of this
    process's CPU per message (the default's reason, ``pulling._chunk_size``)."""
    default = pulling.CHUNK_PULLS
    assert rounds % 2 == 0 and default != 1
    sizes = ("1", str(default))
    rates: dict[str, list[int]] = {size: [] for size in sizes}
    cpu: dict[str, list[float]] = {size: [] for size in sizes}
    try:
        for size in alternating(rounds, *sizes):
            pulling.CHUNK_PULLS = int(size)
            read, seconds, cpu_s = _source_alone(namesrv, topic)
            assert read == rows, (size, read, rows)
            rates[size].append(round(read / seconds))
            cpu[size].append(round(cpu_s / read * 1e6, 2))
    finally:
        pulling.CHUNK_PULLS = default
    return {
        size: {"msgs_per_s_each": rates[size],
                    "msgs_per_s_median": round(statistics.median(rates[size])),
                    "cpu_us_per_msg_each": cpu[size],
                    "cpu_us_per_msg_median": round(statistics.median(cpu[size]), 2)}
        for size in sizes
    }  # fmt: skip


def _batch_into_noop(spark: SparkSession, source: dict[str, str]) -> float:
    """One timed batch read into Spark's ``noop`` sink, the streaming query's sink: every row
    is made and iterated, where ``count()`` needs none of its columns."""
    frame = spark.read.format("rocketmq").options(**source).load()
    began = time.perf_counter()
    frame.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - began


class _Tasks(DataSource):
    """A source of one row per partition that does nothing else: what Spark's Python data
    source machinery costs a task, before any row of ours."""

    @classmethod
    def name(cls) -> str:
        return "bench_tasks"

    def schema(self) -> str:
        return "n int"

    def reader(self, schema: StructType) -> DataSourceReader:
        return _TaskReader(int(self.options.get("partitions", "1")))


class _TaskReader(DataSourceReader):
    def __init__(self, partitions: int) -> None:
        self.count = partitions

    def partitions(self) -> list[InputPartition]:
        return [InputPartition(i) for i in range(self.count)]

    def read(self, partition: InputPartition) -> Iterator[tuple[int]]:
        yield (int(partition.value),)


def _task_overhead(spark: SparkSession, tasks: int = 8, rounds: int = 3) -> dict[str, Any]:
    """Seconds a task costs in Spark's Python data source path: ``tasks`` one-row partitions
    against one, on this session's cores (the median of ``rounds``, after one warm-up)."""
    spark.dataSource.register(_Tasks)

    def timed(partitions: int) -> float:
        frame = spark.read.format("bench_tasks").option("partitions", str(partitions)).load()
        began = time.perf_counter()
        assert frame.count() == partitions
        return time.perf_counter() - began

    timed(tasks)
    many = statistics.median(timed(tasks) for _ in range(rounds))
    one = statistics.median(timed(1) for _ in range(rounds))
    return {"tasks": tasks, "seconds_many": round(many, 3), "seconds_one": round(one, 3),
            "ms_per_task": round((many - one) / (tasks - 1) * 1000, 1)}  # fmt: skip


class _Cpu:
    """CPU seconds that processes spend on reads, by read and by process: this one (the single
    process), the Spark JVM (driver and executor in local mode) and Spark's Python workers
    (every other process under the JVM: the source's executor code, the planner). A read is
    counted whole, its planning included. A process that exits during a read takes its CPU
    with it (Spark keeps its workers: ``spark.python.worker.reuse``), and one that cannot be
    read is left out of that sample."""

    GROUPS = ("this_process", "spark_jvm", "python_workers")

    def __init__(self, spark: SparkSession) -> None:
        self._jvm: int = spark.sparkContext._gateway.proc.pid  # type: ignore[union-attr]
        self.spent: dict[str, dict[str, float]] = {}

    def _now(self) -> dict[int, tuple[str, float]]:
        mine = os.getpid()
        found = {mine: "this_process"} | {
            pid: "spark_jvm" if name == "java" else "python_workers"
            for pid, name in process_tree(self._jvm).items()
        }
        seconds = {pid: process_cpu_s(pid) for pid in found}
        return {pid: (found[pid], cpu) for pid, cpu in seconds.items() if cpu is not None}

    def run(self, read: str, timed: Callable[[], T]) -> T:
        """``timed()``, its processes' CPU added to ``read``'s."""
        before = self._now()
        result = timed()
        spent = self.spent.setdefault(read, dict.fromkeys(self.GROUPS, 0.0))
        for pid, (group, seconds) in self._now().items():  # (a new process: all of its CPU)
            spent[group] += seconds - before.get(pid, (group, 0.0))[1]
        return result

    def per_message(self, read: str, messages: int) -> dict[str, float]:
        """``read``'s CPU in microseconds per message, by process."""
        return {group: round(seconds / messages * 1e6, 2)
                for group, seconds in self.spent[read].items()}  # fmt: skip


def _reads(spark: SparkSession, namesrv: str, topic: str, rows: int, cores: int) -> dict[str, Any]:
    source = {"namesrv": namesrv, "topic": topic, "startingOffsets": "earliest"}
    per_queue = {**source, "minOffsetsPerPartition": "0"}  # one partition per queue (Kafka's)
    # one untimed read first: Spark starts its Python workers and they import the package
    # (steady-state rates are what a long-running query sees)
    spark.read.format("rocketmq").options(**source).load().count()
    # the single process and Spark's batch read in ABBA order (pull, read, read, pull), so
    # that the broker's state (still indexing what was just written, then quiet) falls on both
    cpu = _Cpu(spark)
    count, pull_first = cpu.run("pull", lambda: _pull_all(namesrv, topic))
    batch, read_first, _ = cpu.run("batch", lambda: _batch_read(spark, source))
    _, read_second, _ = cpu.run("batch", lambda: _batch_read(spark, source))
    _, pull_second = cpu.run("pull", lambda: _pull_all(namesrv, topic))
    pull_s, batch_s = (pull_first + pull_second) / 2, (read_first + read_second) / 2
    packed_parts = spark.read.format("rocketmq").options(**source).load().rdd.getNumPartitions()
    unpacked, unpacked_s, queue_parts = _batch_read(spark, per_queue, partitions=True)
    noop_s = cpu.run("noop", lambda: _batch_into_noop(spark, source))
    streams = [_stream_read(spark, source) for _ in range(2)]
    stream_s = statistics.mean(run.seconds for run in streams)
    in_triggers_s = statistics.mean(run.in_triggers_s for run in streams)
    # the sink is at-least-once: a retried task may have sent some rows twice
    assert count == batch == unpacked >= rows, (count, batch, unpacked)
    assert all(run.rows == count for run in streams), [run.rows for run in streams]
    pull_rate = count / pull_s
    alone, alone_s, alone_cpu_s = _source_alone(namesrv, topic)
    assert alone == count, (alone, count)

    def read(seconds: float, partitions: int | None = None) -> dict[str, Any]:
        per_core = count / seconds / cores
        return {"seconds": round(seconds, 2), "msgs_per_s": round(count / seconds),
                "msgs_per_s_per_core": round(per_core),
                "per_core_to_one_process": round(per_core / pull_rate, 2),
                **({"partitions": partitions} if partitions is not None else {})}  # fmt: skip

    return {
        "pull_one_process": {
            "seconds": round(pull_s, 2), "msgs_per_s": round(pull_rate),
            "seconds_each": [round(pull_first, 2), round(pull_second, 2)],
            "cpu_us_per_msg": cpu.per_message("pull", 2 * count),
        },
        "source_code_without_spark": {
            "seconds": round(alone_s, 2),
            "msgs_per_s": round(count / alone_s),
            "to_one_process": round(count / alone_s / pull_rate, 2),
            "cpu_us_per_msg": {"this_process": round(alone_cpu_s / count * 1e6, 2)},
        },
        "spark_batch_read": {
            **read(batch_s, packed_parts),
            "seconds_each": [round(read_first, 2), round(read_second, 2)],
            "cpu_us_per_msg": cpu.per_message("batch", 2 * count),
        },
        "spark_batch_read_one_partition_per_queue": read(unpacked_s, queue_parts),
        "spark_batch_read_into_noop": {
            **read(noop_s), "cpu_us_per_msg": cpu.per_message("noop", count),
        },
        "spark_stream_read": {
            **read(stream_s), "seconds_each": [round(run.seconds, 2) for run in streams],
        },
        "spark_stream_read_in_triggers": {
            **read(in_triggers_s),
            "seconds_each": [round(run.in_triggers_s, 2) for run in streams],
            "triggers_each": [run.triggers for run in streams],
            "ms_by_phase_each": [run.ms_by_phase for run in streams],
        },
        "spark_task_overhead": _task_overhead(spark),
        **({"spark_batch_read_by_min_offsets_per_partition": _packing(spark, source, count),
            "source_code_by_chunk_pulls": _chunking(namesrv, topic, count)}
           if cores == 1 else {}),
    }  # fmt: skip


def _session(master: str) -> SparkSession:
    spark = (
        SparkSession.builder.master(master).appName("rocketmq-actors-bench")
        .config("spark.ui.enabled", "false").getOrCreate()
    )  # fmt: skip
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark


def bench(namesrv: str, rows: int, partitions: int) -> dict[str, Any]:
    for var in ("SPARK_LAUNCHER_OPTS", "SPARK_SUBMIT_OPTS"):  # no /tmp/hsperfdata_<user>
        os.environ.setdefault(var, "-XX:-UsePerfData")
    spark = _session("local[2]")
    try:
        df = spark.range(rows, numPartitions=partitions).select(
            F.concat(F.lit("x" * 240), F.lpad(F.col("id").cast("string"), 16, "0")).alias("body"),
            F.concat(F.lit("k"), F.col("id").cast("string")).alias("keys"),
            F.lit("bench").alias("tags"),
        )
        df.cache().count()
        stamp = time.time_ns()
        began = time.perf_counter()
        report = publish_dataframe(df, _topic(namesrv, f"bench_spark_driver_{stamp}"),
                                   namesrv=namesrv, progress=None)  # fmt: skip
        driver_s = time.perf_counter() - began
        topic = _topic(namesrv, f"bench_spark_sink_{stamp}")
        began = time.perf_counter()
        (df.write.format("rocketmq").option("namesrv", namesrv).option("topic", topic)
            .mode("append").save())  # fmt: skip
        sink_s = time.perf_counter() - began
        reads = _reads(spark, namesrv, topic, rows, cores=2)
    finally:
        spark.stop()
    spark = _session("local[1]")
    try:
        one_core = _reads(spark, namesrv, topic, rows, cores=1)
    finally:
        spark.stop()
    return {
        "rows": rows,
        "partitions": partitions,
        "driver": {"sent": report.sent, "failed": report.failed, "seconds": round(driver_s, 2),
                   "rows_per_s": round(rows / driver_s)},
        "sink": {"seconds": round(sink_s, 2), "rows_per_s": round(rows / sink_s)},
        "local[2]": reads,
        "local[1]": one_core,
    }  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=300_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--namesrv", help="use this cluster instead of starting one")
    parser.add_argument("--out", type=Path, default=RESULTS / "spark.json")
    args = parser.parse_args(argv)
    figures = on_cluster(args.namesrv, lambda namesrv: bench(namesrv, args.rows, args.partitions))
    write_results(args.out, {"body_bytes": 256, **figures})
    return 0


if __name__ == "__main__":
    raise SystemExit(run_main(main))
