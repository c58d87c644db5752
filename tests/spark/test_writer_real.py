"""The rocketmq data source's writer against the real cluster: delayed and timer rows, rows
pinned to a queue, a DataFrame with Kafka's column names, compressed bodies, and the NameServer
probe that fails a write before any task runs."""

from __future__ import annotations

import datetime as dt
import socket
import time

import anyio
import pytest
from pyspark.sql import DataFrame, SparkSession

from rocketmq_actors.producer import Producer, create_topic
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.compression import CompressionType
from rocketmq_actors.protocol.messages import MessageSysFlag
from rocketmq_actors.protocol.records import MessageExt
from rocketmq_actors.spark import OptionError, publish_dataframe
from rocketmq_actors.testing.cluster import LocalCluster

from ..producer.pull import pull

pytestmark = [pytest.mark.integration, pytest.mark.spark]

DELAYS = {1: 1.0, 2: 5.0}  # the broker's default messageDelayLevel: 1s 5s 10s ...


def _read(namesrv: str, topic: str, queues: int, expect: int, *, raw: bool = False,
          timeout: float = 40.0) -> dict[int, list[MessageExt]]:  # fmt: skip
    """The topic's messages by queue id (waits until ``expect`` arrived in all, or the timeout);
    with ``raw`` the bodies as stored (not decompressed)."""

    async def run() -> dict[int, list[MessageExt]]:
        async with Producer(namesrv=namesrv, group="G_spark_writer_admin") as producer:
            got: dict[int, list[MessageExt]] = {q: [] for q in range(queues)}
            deadline = time.monotonic() + timeout
            while sum(map(len, got.values())) < expect and time.monotonic() < deadline:
                for q in range(queues):
                    queue = MessageQueue(topic, "broker-a", q)
                    got[q] += await pull(producer.instance, queue, expect=1, timeout=1.0,
                                         offset=len(got[q]), decompress=not raw)  # fmt: skip
            return got

    return anyio.run(run)


def _topic(namesrv: str, topic: str, queues: int) -> None:
    async def create() -> None:
        async with Producer(namesrv=namesrv, group="G_spark_writer_admin") as producer:
            await create_topic(producer.instance, topic, queues=queues)

    anyio.run(create)


def _write(df: DataFrame, namesrv: str, topic: str, **options: str) -> None:
    (df.write.format("rocketmq").option("namesrv", namesrv).option("topic", topic)
       .options(**options).mode("append").save())  # fmt: skip


def _by_key(got: dict[int, list[MessageExt]]) -> dict[str, MessageExt]:
    return {m.keys[0]: m for messages in got.values() for m in messages}


def test_delay_level_rows_arrive_after_their_delay(
    spark: SparkSession, rocketmq_namesrv: str, unique_topic: str
) -> None:
    _topic(rocketmq_namesrv, unique_topic, 1)
    rows = [(f"d{i}", f"d{i}", level) for i, level in enumerate([1, 2, 0, 1, 2, None])]
    df = spark.createDataFrame(rows, "body string, keys string, delay_level int")
    _write(df.repartition(2), rocketmq_namesrv, unique_topic)
    got = _by_key(_read(rocketmq_namesrv, unique_topic, 1, len(rows)))
    assert set(got) == {key for key, _, _ in rows}
    for key, _, level in rows:
        m = got[key]
        # put into the topic (where consumers see it) only once its level's delay passed
        waited = m.store_timestamp - m.born_timestamp
        if level:
            assert waited >= DELAYS[level] * 1000 - 100, (key, level, waited)
            assert m.properties["REAL_TOPIC"] == unique_topic
        else:
            assert "REAL_TOPIC" not in m.properties, key  # stored at once, never scheduled


def test_deliver_at_rows_are_timer_messages_on_5x(
    spark: SparkSession, rocketmq_namesrv: str, unique_topic: str, rocketmq_cluster: LocalCluster
) -> None:
    if rocketmq_cluster.spec.is_4x:
        pytest.skip("timer messages are a 5.x feature: 4.x is test_deliver_at_is_refused_on_4x")
    _topic(rocketmq_namesrv, unique_topic, 1)
    at = dt.datetime.now(dt.UTC).replace(microsecond=0) + dt.timedelta(seconds=4)
    at_ms = int(at.timestamp() * 1000)
    df = spark.createDataFrame([("t-ts", "t-ts", at, None), ("t-ms", "t-ms", None, at_ms)],
                               "body string, keys string, deliver_at timestamp, "
                               "at_ms long")  # fmt: skip
    stamped = df.selectExpr("body", "keys", "coalesce(deliver_at, timestamp_millis(at_ms)) AS "
                            "deliver_at")  # fmt: skip
    epoch = spark.createDataFrame([("t-long", "t-long", at_ms)],
                                  "body string, keys string, deliver_at long")  # fmt: skip
    _write(stamped, rocketmq_namesrv, unique_topic)
    _write(epoch, rocketmq_namesrv, unique_topic)
    got = _by_key(_read(rocketmq_namesrv, unique_topic, 1, 3))
    assert set(got) == {"t-ts", "t-ms", "t-long"}
    for m in got.values():
        assert m.properties["TIMER_DELIVER_MS"] == str(at_ms)  # the instant the row gave
        # the timer wheel has 1 s slots: delivered in the second the delivery time falls in
        assert m.store_timestamp >= at_ms - 1000, (m.keys, m.store_timestamp - at_ms)


def test_deliver_at_is_refused_on_4x(
    spark: SparkSession, rocketmq_namesrv: str, unique_topic: str, rocketmq_cluster: LocalCluster
) -> None:
    if not rocketmq_cluster.spec.is_4x:
        pytest.skip("run with --rocketmq-version 4.9.7")
    _topic(rocketmq_namesrv, unique_topic, 1)
    at_ms = int(time.time() * 1000) + 60_000
    df = spark.createDataFrame([("now", "k-now", None), ("later", "k-later", at_ms)],
                               "body string, keys string, deliver_at long")  # fmt: skip
    report = publish_dataframe(df, unique_topic, namesrv=rocketmq_namesrv)
    assert (report.sent, report.failed) == (1, 1)
    assert "UnsupportedByBroker" in report.errors[0] and "5.x" in report.errors[0]
    with pytest.raises(Exception, match=r"needs a RocketMQ 5\.x broker"):  # the task fails
        _write(df, rocketmq_namesrv, unique_topic)
    # a 4.x broker would have delivered it at once: nothing but the plain rows was stored
    got = _read(rocketmq_namesrv, unique_topic, 1, 99, timeout=3.0)[0]
    assert {m.body for m in got} == {b"now"}


def test_queue_id_rows_land_on_that_queue(
    spark: SparkSession, rocketmq_namesrv: str, unique_topic: str
) -> None:
    _topic(rocketmq_namesrv, unique_topic, 4)
    rows = [(f"q{i}", f"q{i}", i % 4) for i in range(40)]
    df = spark.createDataFrame(rows, "body string, keys string, queue_id int").repartition(3)
    _write(df, rocketmq_namesrv, unique_topic)
    got = _read(rocketmq_namesrv, unique_topic, 4, len(rows))
    for queue_id, messages in got.items():
        assert sorted(m.keys[0] for m in messages) == sorted(
            key for key, _, q in rows if q == queue_id
        )
    # a queue the topic does not have fails that row alone, saying so
    bad = spark.createDataFrame([("ok", "ok", 1), ("lost", "lost", 7)],
                                "body string, keys string, queue_id int")  # fmt: skip
    report = publish_dataframe(bad, unique_topic, namesrv=rocketmq_namesrv)
    assert (report.sent, report.failed) == (1, 1)
    assert "queue_id 7 is not a writable queue" in report.errors[0]
    assert "broker-a: queues 0..3" in report.errors[0]


def test_a_dataframe_with_kafka_column_names_round_trips(
    spark: SparkSession, rocketmq_namesrv: str, unique_topic: str
) -> None:
    _topic(rocketmq_namesrv, unique_topic, 2)
    rows = [(f"order-{i}", f"payload {i}".encode(), [("source", b"kafka"), ("n", str(i).encode())])
            for i in range(50)]  # fmt: skip
    df = spark.createDataFrame(
        rows, "key string, value binary, headers array<struct<key:string,value:binary>>"
    )
    _write(df, rocketmq_namesrv, unique_topic)
    got = _by_key(_read(rocketmq_namesrv, unique_topic, 2, len(rows)))
    assert len(got) == len(rows)
    for i in (0, 17, 49):
        m = got[f"order-{i}"]
        assert m.body == f"payload {i}".encode()
        assert m.properties["source"] == "kafka" and m.properties["n"] == str(i)


@pytest.mark.parametrize("kind", ["ZLIB", "LZ4", "ZSTD"])
def test_compressed_bodies_arrive_intact(
    spark: SparkSession, rocketmq_namesrv: str, unique_topic: str, kind: str
) -> None:
    _topic(rocketmq_namesrv, unique_topic, 1)
    big = [(f"big-{i}", (f"{i:04d}" * 300).encode()) for i in range(20)]  # 1200 bytes
    small = [(f"small-{i}", b"tiny") for i in range(20)]
    df = spark.createDataFrame(big + small, "keys string, body binary").repartition(2)
    # no sharding key: the small rows go in batches, the big ones alone (batches are never
    # compressed)
    _write(df, rocketmq_namesrv, unique_topic, compressType=kind, compressLevel="3",
           compressThreshold="1000")  # fmt: skip
    stored = _by_key(_read(rocketmq_namesrv, unique_topic, 1, 40, raw=True))
    bits = MessageSysFlag.COMPRESSED | MessageSysFlag.COMPRESSION_MASK
    for key, _ in big:
        assert stored[key].sys_flag & bits == CompressionType[kind].sys_flag
    for key, _ in small:
        assert stored[key].sys_flag & bits == 0 and stored[key].body == b"tiny"
    got = _by_key(_read(rocketmq_namesrv, unique_topic, 1, 40))
    assert {key: got[key].body for key, _ in big} == dict(big)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def _jobs_run(spark: SparkSession, group: str) -> list[int]:
    return list(spark.sparkContext.statusTracker().getJobIdsForGroup(group))


def test_an_unreachable_namesrv_fails_the_write_before_any_task(spark: SparkSession) -> None:
    namesrv = f"127.0.0.1:{_closed_port()}"
    spark.sparkContext.setJobGroup("unreachable-namesrv", "must not run")
    df = spark.createDataFrame([("x",)], "body string")
    options = {"sendTimeout": "30", "retryTimes": "5"}  # tasks would take minutes
    began = time.monotonic()
    with pytest.raises(Exception, match=f"no NameServer of '{namesrv}' can be reached"):
        _write(df, namesrv, "T_unreachable", **options)
    with pytest.raises(OptionError, match=f"{namesrv}: Connection refused"):
        publish_dataframe(df, "T_unreachable", namesrv=namesrv, sendTimeout="30")
    assert _jobs_run(spark, "unreachable-namesrv") == []  # refused when planned: no job ran
    assert time.monotonic() - began < 60
