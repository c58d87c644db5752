"""PySpark publishing against the real cluster: driver-side and the ``rocketmq`` data source
(batch and streaming writes, batch reads), a retried task, and bad options."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from rocketmq_actors.consumer.pull import OffsetReset, PullConsumer, PullOptions
from rocketmq_actors.producer import Producer, create_topic
from rocketmq_actors.protocol.records import MessageExt
from rocketmq_actors.spark import ColumnError, OptionError, publish_dataframe

pytestmark = [pytest.mark.integration, pytest.mark.spark]

ROWS = 2000


def _create_topic(namesrv: str, topic: str, queues: int = 4) -> None:
    async def create() -> None:
        async with Producer(namesrv=namesrv, group="G_spark_admin") as producer:
            await create_topic(producer.instance, topic, queues=queues)

    anyio.run(create)


def _consume_all(namesrv: str, topic: str, group: str, at_least: int) -> list[MessageExt]:
    """Every message on ``topic`` (waits until ``at_least`` arrived, then drains)."""

    async def run() -> list[MessageExt]:
        got: list[MessageExt] = []
        async with PullConsumer(group=group, topics=[topic], namesrv=namesrv,
                                options=PullOptions(auto_offset_reset=OffsetReset.EARLIEST)
                                ) as consumer:  # fmt: skip
            with anyio.fail_after(60):
                while True:
                    batch = await consumer.getmany(timeout=1.0)
                    for records in batch.values():
                        got += records
                    if not batch and len(got) >= at_least:
                        return got

    return anyio.run(run)


def _rows(spark: SparkSession, count: int = ROWS, partitions: int = 4) -> DataFrame:
    return spark.range(count, numPartitions=partitions).select(
        F.concat(F.lit("order-"), F.col("id").cast("string")).alias("body"),
        F.array(F.concat(F.lit("k"), F.col("id").cast("string"))).alias("keys"),
        F.when(F.col("id") % 2 == 0, F.lit("even")).otherwise(F.lit("odd")).alias("tags"),
        F.create_map(F.lit("n"), F.col("id").cast("string")).alias("properties"),
    )


def _check_intact(messages: list[MessageExt], count: int = ROWS) -> None:
    by_key = {m.keys[0]: m for m in messages}
    assert len(by_key) == count  # every row arrived
    for i in (0, 1, count // 2, count - 1):
        m = by_key[f"k{i}"]
        assert m.body == f"order-{i}".encode()
        assert m.tags == ("even" if i % 2 == 0 else "odd")
        assert m.properties["n"] == str(i)


def test_driver_side_publish(
    spark: SparkSession, rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    _create_topic(rocketmq_namesrv, unique_topic)
    progress: list[int] = []
    report = publish_dataframe(
        _rows(spark), unique_topic, namesrv=rocketmq_namesrv,
        progress=lambda s: progress.append(s.sent), chunkSize=64,
    )  # fmt: skip
    assert (report.sent, report.failed) == (ROWS, 0)
    assert progress[-1] == ROWS  # reported on the way (every 10,000 by default) and at the end
    got = _consume_all(rocketmq_namesrv, unique_topic, unique_group, ROWS)
    assert len(got) == ROWS
    _check_intact(got)


def test_data_source_batch_write_then_read(
    spark: SparkSession, rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    _create_topic(rocketmq_namesrv, unique_topic)
    (_rows(spark).write.format("rocketmq").option("namesrv", rocketmq_namesrv)
        .option("topic", unique_topic).mode("append").save())  # fmt: skip
    got = _consume_all(rocketmq_namesrv, unique_topic, unique_group, ROWS)
    assert len(got) == ROWS
    _check_intact(got)
    read = (spark.read.format("rocketmq").option("namesrv", rocketmq_namesrv)
            .option("topic", unique_topic).load())  # fmt: skip
    assert read.count() == ROWS
    row = read.where(F.col("body") == F.lit(b"order-7")).collect()[0]
    assert row.keys == ["k7"] and row.tags == "odd" and row.properties == {"n": "7"}


def test_small_queue_ranges_share_partitions_of_the_sessions_cores(
    spark: SparkSession, rocketmq_namesrv: str, unique_topic: str
) -> None:
    """register() carries the session's default parallelism (2 here) to Spark's planner
    process: 8 small queue ranges are read in 2 partitions, every row once; with
    minOffsetsPerPartition 0, one partition per queue, as Kafka's source."""
    assert spark.sparkContext.defaultParallelism == 2
    _create_topic(rocketmq_namesrv, unique_topic, queues=8)
    (_rows(spark).write.format("rocketmq").option("namesrv", rocketmq_namesrv)
        .option("topic", unique_topic).mode("append").save())  # fmt: skip
    source = {"namesrv": rocketmq_namesrv, "topic": unique_topic}
    packed = spark.read.format("rocketmq").options(**source).load()
    per_queue = spark.read.format("rocketmq").options(**source, minOffsetsPerPartition="0").load()
    queues = per_queue.select("broker_name", "queue_id").distinct().count()
    assert queues > 2 and per_queue.rdd.getNumPartitions() == queues
    assert packed.rdd.getNumPartitions() == 2
    offsets = ["broker_name", "queue_id", "queue_offset"]
    assert sorted(packed.select(*offsets).collect()) == sorted(per_queue.select(*offsets).collect())
    assert packed.count() == ROWS


def test_a_batch_read_with_nothing_in_range_is_empty(
    spark: SparkSession, rocketmq_namesrv: str, unique_topic: str
) -> None:
    """No queue has anything between its start and its end: Spark reads its one placeholder
    partition (the reader failed on it)."""
    _create_topic(rocketmq_namesrv, unique_topic)
    source = {"namesrv": rocketmq_namesrv, "topic": unique_topic}
    assert spark.read.format("rocketmq").options(**source).load().count() == 0  # empty topic
    (_rows(spark, count=10).write.format("rocketmq").option("namesrv", rocketmq_namesrv)
        .option("topic", unique_topic).mode("append").save())  # fmt: skip
    reader = spark.read.format("rocketmq").options(**source)
    assert reader.option("startingOffsets", "latest").load().collect() == []
    assert reader.option("startingOffsets", "earliest").load().count() == 10


def test_data_source_streaming_write(
    spark: SparkSession, rocketmq_namesrv: str, unique_topic: str, unique_group: str,
    tmp_path: Path,
) -> None:  # fmt: skip
    _create_topic(rocketmq_namesrv, unique_topic)
    source = tmp_path / "in"
    source.mkdir()
    for part in range(3):
        lines = [json.dumps({"body": f"s{part}-{i}", "keys": f"s{part}-{i}"}) for i in range(100)]
        (source / f"part{part}.json").write_text("\n".join(lines))
    stream = spark.readStream.schema("body string, keys string").json(str(source))
    query = (
        stream.writeStream.format("rocketmq").option("namesrv", rocketmq_namesrv)
        .option("topic", unique_topic).option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(availableNow=True).start()
    )  # fmt: skip
    query.awaitTermination(120)
    assert query.exception() is None
    got = _consume_all(rocketmq_namesrv, unique_topic, unique_group, 300)
    assert sorted(m.body.decode() for m in got) == sorted(
        f"s{p}-{i}" for p in range(3) for i in range(100)
    )


def test_a_retried_task_loses_nothing_and_duplicates_show_by_key(
    spark: SparkSession, rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    """On its first attempt, row 1300 (partition 2) has a topic name the client refuses: the
    task sends its other 499 rows, then fails (failOnError), and Spark runs it again. Every row
    arrives; the 499 re-sent ones arrive twice, told apart by key."""
    _create_topic(rocketmq_namesrv, unique_topic)

    @F.udf("string", useArrow=False)  # a plain Python UDF (no type-hint inference)
    def topic_for(row_id: int) -> str:
        from pyspark import TaskContext

        context = TaskContext.get()
        first_attempt = context is not None and context.attemptNumber() == 0
        return "bad topic!" if row_id == 1300 and first_attempt else unique_topic

    df = spark.range(ROWS, numPartitions=4).select(
        F.concat(F.lit("order-"), F.col("id").cast("string")).alias("body"),
        F.concat(F.lit("k"), F.col("id").cast("string")).alias("keys"),
        topic_for(F.col("id")).alias("topic"),
    )
    df.write.format("rocketmq").option("namesrv", rocketmq_namesrv).mode("append").save()
    got = _consume_all(rocketmq_namesrv, unique_topic, unique_group, ROWS)
    counts = Counter(m.keys[0] for m in got)
    assert set(counts) == {f"k{i}" for i in range(ROWS)}  # nothing lost
    duplicated = sorted(int(k[1:]) for k, c in counts.items() if c > 1)
    assert len(duplicated) == 499 and all(1000 <= i < 1500 for i in duplicated)
    assert max(counts.values()) == 2


def _jobs_run(spark: SparkSession, group: str) -> list[int]:
    return list(spark.sparkContext.statusTracker().getJobIdsForGroup(group))


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({"topic": "T_x"}, OptionError, "namesrv"),
        ({"namesrv": "127.0.0.1:9876", "topic": "T_x", "chunkSize": "many"}, OptionError,
         "chunkSize"),
        ({"namesrv": "127.0.0.1:9876", "topic": "T_x", "accessKey": "a"}, OptionError, "ACL"),
        ({"namesrv": "127.0.0.1:9876", "topic": "T_x", "sendTimout": "3"}, OptionError,
         "unknown option"),
    ],
)  # fmt: skip
def test_bad_options_fail_before_any_task_runs(
    spark: SparkSession, options: dict[str, str], error: type[Exception], match: str
) -> None:
    group = f"bad-{match}"
    spark.sparkContext.setJobGroup(group, "must not run")
    with pytest.raises(Exception, match=match):
        _rows(spark, 10).write.format("rocketmq").options(**options).mode("append").save()
    assert _jobs_run(spark, group) == []
    with pytest.raises(error, match=match):  # the same check, driver-side
        extra: dict[str, Any] = {k: v for k, v in options.items() if k != "namesrv"}
        publish_dataframe(_rows(spark, 10), namesrv=options.get("namesrv", ""), **extra)
    assert _jobs_run(spark, group) == []


def test_bad_columns_fail_before_any_task_runs(spark: SparkSession) -> None:
    spark.sparkContext.setJobGroup("bad-columns", "must not run")
    wrong_type = spark.range(5).select(F.col("id").alias("body"))  # bigint body
    with pytest.raises(Exception, match="'body' is bigint"):
        (wrong_type.write.format("rocketmq").option("namesrv", "127.0.0.1:9876")
            .option("topic", "T_x").mode("append").save())  # fmt: skip
    with pytest.raises(ColumnError, match="unknown column"):
        publish_dataframe(_rows(spark, 5).withColumnRenamed("tags", "tag"), "T_x",
                          namesrv="127.0.0.1:9876")  # fmt: skip
    assert _jobs_run(spark, "bad-columns") == []
