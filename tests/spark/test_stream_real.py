"""The ``rocketmq`` source against the real cluster: streaming with offsets in the checkpoint
(limits, AvailableNow, new queues, a restart, a killed driver on a multi-process Spark
cluster), and batch reads with the Kafka-style options."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from pyspark.sql import SparkSession

from rocketmq_actors.producer import Message, Producer, create_topic
from rocketmq_actors.spark import backlog
from tests.spark.jobs import job_events

pytestmark = [pytest.mark.integration, pytest.mark.spark]

HERE = Path(__file__).parent


def _parity(i: int) -> str:
    return "even" if i % 2 == 0 else "odd"


def _first_ten_odd(i: int) -> str:
    return "odd" if i < 10 else "even"


def _produce(
    namesrv: str,
    topic: str,
    keys: list[str],
    *,
    queues: int = 4,
    tags: Callable[[int], str] = _parity,
) -> None:
    """Create (or widen) ``topic`` to ``queues`` queues and send one message per key."""

    async def send() -> None:
        async with Producer(namesrv=namesrv, group="G_spark_feed") as producer:
            await create_topic(producer.instance, topic, queues=queues)
            await producer.instance.routes.refresh(topic)
            for i, key in enumerate(keys):
                await producer.send(Message(topic=topic, body=key.encode(), keys=[key],
                                            tags=tags(i)))  # fmt: skip

    anyio.run(send)


def _stream(spark: SparkSession, namesrv: str, topic: str, **options: str) -> Any:
    reader = spark.readStream.format("rocketmq").option("namesrv", namesrv).option("topic", topic)
    for name, value in {"startingOffsets": "earliest", **options}.items():
        reader = reader.option(name, value)
    return reader.load()


def test_available_now_reads_the_backlog_in_batches_of_max_offsets_per_trigger(
    spark: SparkSession, rocketmq_namesrv: str, unique_topic: str
) -> None:
    keys = [f"k{i}" for i in range(400)]
    _produce(rocketmq_namesrv, unique_topic, keys)
    name = f"mem_{unique_topic[-8:]}"
    query = (
        _stream(spark, rocketmq_namesrv, unique_topic, maxOffsetsPerTrigger="100")
        .writeStream.format("memory").queryName(name).trigger(availableNow=True).start()
    )  # fmt: skip
    assert query.awaitTermination(180)  # AvailableNow: stops by itself at the backlog's end
    rows = spark.table(name).collect()
    assert sorted(r.keys[0] for r in rows) == sorted(keys)  # each once
    progress = [p for p in query.recentProgress if p["numInputRows"]]
    batches = [p["numInputRows"] for p in progress]
    assert sum(batches) == 400 and max(batches) <= 100 and len(batches) >= 4
    # how far behind each batch left the query, from the offsets in its progress
    behind = [backlog(p)[unique_topic] for p in progress]
    assert behind[0] == 400 - batches[0] and behind[-1] == 0
    assert behind == sorted(behind, reverse=True)
    assert {r.queue_id for r in rows} == {0, 1, 2, 3}


def test_a_restarted_stream_resumes_at_its_checkpoint_and_reads_new_queues(
    spark: SparkSession, rocketmq_namesrv: str, unique_topic: str, tmp_path: Path
) -> None:
    first, second = [f"a{i}" for i in range(40)], [f"b{i}" for i in range(120)]
    _produce(rocketmq_namesrv, unique_topic, first, queues=2)

    def run_once() -> None:
        query = (
            _stream(spark, rocketmq_namesrv, unique_topic, tags="even").writeStream
            .format("parquet").option("path", str(tmp_path / "out"))
            .option("checkpointLocation", str(tmp_path / "checkpoint")).start()
        )  # fmt: skip
        try:
            query.processAllAvailable()
        finally:
            query.stop()

    run_once()
    # 4 more queues, then sends (the evens reach all 6)
    _produce(rocketmq_namesrv, unique_topic, second, queues=6, tags=_first_ten_odd)
    run_once()
    rows = spark.read.parquet(str(tmp_path / "out")).collect()
    wanted = [k for i, k in enumerate(first) if i % 2 == 0] + [
        k for i, k in enumerate(second) if _first_ten_odd(i) == "even"
    ]
    assert sorted(r.keys[0] for r in rows) == sorted(wanted)  # once each, odd tags filtered out
    assert {r.tags for r in rows} == {"even"}
    assert {r.queue_id for r in rows if r.keys[0].startswith("b")} >= {2, 3, 4, 5}


@pytest.mark.solo
@pytest.mark.timeout(900)  # two Spark clusters of three JVMs each start, one after the other
def test_a_killed_driver_restarted_from_its_checkpoint_writes_every_message_exactly_once(
    spark: SparkSession, rocketmq_namesrv: str, unique_topic: str, tmp_path: Path
) -> None:
    """On ``local-cluster[2,1,1024]``: two executor JVMs with their own Python workers."""
    keys = [f"k{i}" for i in range(1200)]
    _produce(rocketmq_namesrv, unique_topic, keys)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    argv = [sys.executable, str(HERE / "stream_job.py"), "local-cluster[2,1,1024]",
            rocketmq_namesrv, unique_topic, str(tmp_path / "checkpoint"), str(tmp_path / "out"),
            str(scratch)]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "PYSPARK_PYTHON"}  # register() chooses
    log = (tmp_path / "job.log").open("w")
    job = subprocess.Popen([*argv, "--max-offsets", "100"], stdout=subprocess.PIPE, stderr=log,
                           text=True, env=env, start_new_session=True)  # fmt: skip
    try:
        job_events(job, lambda e: e.get("batch", -1) >= 1, timeout=300)  # two batches written
    finally:
        os.killpg(job.pid, signal.SIGKILL)  # the driver, its JVM, executors and workers
        job.wait()
    again = subprocess.run([*argv, "--available-now"], capture_output=True, text=True, env=env,
                           timeout=600, check=False)  # fmt: skip
    assert again.returncode == 0, again.stderr[-3000:]
    assert '{"done": true}' in again.stdout
    rows = spark.read.parquet(str(tmp_path / "out")).collect()  # committed files only
    written = Counter(r.key for r in rows)
    assert sorted(written) == sorted(keys)  # 0 missing
    assert [k for k, n in written.items() if n > 1] == []  # 0 duplicated
    assert all(r.body == r.key for r in rows)


def test_batch_reads_with_pattern_filters_offsets_and_min_partitions(
    spark: SparkSession, rocketmq_namesrv: str, unique_topic: str
) -> None:
    one, two = f"{unique_topic}-one", f"{unique_topic}-two"
    _produce(rocketmq_namesrv, one, [f"o{i}" for i in range(20)], queues=2)
    _produce(rocketmq_namesrv, two, [f"t{i}" for i in range(20)], queues=2)

    def read(**options: str) -> Any:
        reader = spark.read.format("rocketmq").option("namesrv", rocketmq_namesrv)
        for name, value in options.items():
            reader = reader.option(name, value)
        return reader.load()

    pattern = read(topicPattern=re.escape(unique_topic) + "-.*", tags="even", minPartitions="6")
    assert pattern.rdd.getNumPartitions() >= 6
    rows = pattern.collect()
    assert sorted(r.keys[0] for r in rows) == sorted(
        [f"o{i}" for i in range(0, 20, 2)] + [f"t{i}" for i in range(0, 20, 2)]
    )
    every = read(topics=f"{one},{two}").collect()
    assert len(every) == 40
    queue0 = sorted(
        (r.queue_offset, r.keys[0]) for r in every if r.topic == one and r.queue_id == 0
    )
    broker = next(r.broker_name for r in every if r.topic == one and r.queue_id == 0)
    ranged = read(topic=one, startingOffsets=json.dumps({one: {f"{broker}:0": 3}}),
                  endingOffsets=json.dumps({one: {f"{broker}:0": 5}})).collect()  # fmt: skip
    mine = sorted((r.queue_offset, r.keys[0]) for r in ranged if r.queue_id == 0)
    assert mine == queue0[3:5]  # [3, 5) of queue 0; the other queue whole
    assigned = read(assign=json.dumps({one: [f"{broker}:0"]}), includeHeaders="true").collect()
    assert sorted((r.queue_offset, r.keys[0]) for r in assigned) == queue0  # queue 0 only
    assert len(ranged) == 2 + sum(1 for r in every if r.topic == one and r.queue_id != 0)
    since = sorted(r.store_timestamp for r in every if r.topic == one)[10]
    stamped = read(topic=one, startingTimestamp=str(round(since.timestamp() * 1000))).collect()
    assert {r.keys[0] for r in stamped} == {
        r.keys[0] for r in every if r.topic == one and r.store_timestamp >= since
    }


def test_unknown_and_misspelt_source_options_fail_when_the_read_is_planned(
    spark: SparkSession, rocketmq_namesrv: str, unique_topic: str
) -> None:
    for options, message in (
        ({"startingOffset": "earliest"}, "unknown option"),
        ({"failOnDataLos": "false"}, "unknown option"),  # names are case-insensitive
        ({"maxOffsetsPerTrigger": "10"}, "do not apply to a batch read"),
        ({"startingOffsets": "first"}, "must be earliest, latest or JSON"),
    ):
        reader = spark.read.format("rocketmq").option("namesrv", rocketmq_namesrv)
        reader = reader.option("topic", unique_topic)
        for name, value in options.items():
            reader = reader.option(name, value)
        with pytest.raises(Exception, match=message):
            reader.load().collect()
