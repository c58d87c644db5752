"""The main job behind `make run`: a real pipeline over a real local RocketMQ.

1. start a local RocketMQ cluster (NameServer + broker, jars from Maven Central);
2. start the consumer daemon (`examples/aggregator.py`) in its own process;
3. in Spark (local mode, 2 worker threads): generate 50,000 orders, keep the paid ones, price
   them (tax by region), and publish them from the executors through the ``rocketmq`` data
   source - one message per order, keyed by order id, tagged by region;
4. the daemon totals orders and revenue per region (de-duplicating by key) and writes them;
5. compare its totals with the same aggregation done by Spark: equal, or exit 1;
6. the streaming leg: a Spark structured-streaming query reads the topic back with the
   ``rocketmq`` source (Trigger.AvailableNow, offsets in its checkpoint) into parquet files,
   and the totals of those files (de-duplicated by order id) must equal Spark's too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from rocketmq_actors import Producer, create_topic
from rocketmq_actors.logs import configure_logging
from rocketmq_actors.spark import register
from rocketmq_actors.testing.cluster import LocalCluster

TOPIC = "pipeline_orders"
GROUP = "pipeline_totals"
ORDERS = 50_000
TAX = {"north": 0.20, "south": 0.10, "east": 0.15, "west": 0.05, "central": 0.0}
HERE = Path(__file__).resolve().parent


def orders(spark: SparkSession, count: int = ORDERS) -> DataFrame:
    """Generated, deterministic: order id, customer, region, amount in cents, status."""
    regions = F.array(*[F.lit(r) for r in TAX])
    return spark.range(count, numPartitions=4).select(
        F.format_string("order-%06d", F.col("id")).alias("order_id"),
        F.format_string("customer-%04d", (F.col("id") * 7919) % 1000).alias("customer"),
        F.element_at(regions, (F.floor(F.col("id") / 5) % len(TAX) + 1).cast("int")).alias(
            "region"
        ),
        ((F.col("id") * 104729) % 20000 + 100).alias("amount_cents"),
        F.when(F.col("id") % 5 == 0, F.lit("cancelled")).otherwise(F.lit("paid")).alias("status"),
    )


def priced(df: DataFrame) -> DataFrame:
    """Paid orders with their tax and total, as the messages to publish."""
    rate = F.create_map(*[x for r, t in TAX.items() for x in (F.lit(r), F.lit(t))])
    paid = df.where(F.col("status") == "paid").withColumn(
        "total_cents", F.round(F.col("amount_cents") * (1 + rate[F.col("region")])).cast("long")
    )
    return paid.select(
        F.to_json(F.struct("order_id", "customer", "region", "amount_cents", "total_cents"))
        .alias("body"),
        F.col("order_id").alias("keys"),
        F.col("region").alias("tags"),
        F.create_map(F.lit("customer"), F.col("customer")).alias("properties"),
        F.col("region"), F.col("total_cents"),
    )  # fmt: skip


def expected(messages: DataFrame) -> dict[str, Any]:
    rows = messages.groupBy("region").agg(
        F.count("*").alias("orders"), F.sum("total_cents").alias("revenue_cents")
    )
    by_region = {r["region"]: {"orders": r["orders"], "revenue_cents": r["revenue_cents"]}
                 for r in rows.collect()}  # fmt: skip
    return {"orders": sum(v["orders"] for v in by_region.values()),
            "by_region": dict(sorted(by_region.items()))}  # fmt: skip


def stream_to_parquet(
    spark: SparkSession, namesrv: str, topic: str, folder: Path, *, per_trigger: int = 10_000
) -> dict[str, Any]:
    """Read ``topic`` from its start with a streaming query into parquet files under
    ``folder`` (Trigger.AvailableNow: what is stored now, ``per_trigger`` offsets a
    micro-batch), then total those files as :func:`expected` does, by distinct order id."""
    stream = (
        spark.readStream.format("rocketmq").option("namesrv", namesrv).option("topic", topic)
        .option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", str(per_trigger))
        .load()
    )  # fmt: skip
    fields = "order_id string, region string, total_cents long"
    parsed = stream.select(F.from_json(F.col("body").cast("string"), fields).alias("o"))
    query = (
        parsed.select("o.*").writeStream.format("parquet").option("path", str(folder / "out"))
        .option("checkpointLocation", str(folder / "checkpoint"))
        .trigger(availableNow=True).start()
    )  # fmt: skip
    query.awaitTermination()
    batches = sum(1 for p in query.recentProgress if p["numInputRows"])
    rows = spark.read.parquet(str(folder / "out"))
    totals = expected(rows.dropDuplicates(["order_id"]))
    return {**totals, "rows": rows.count(), "micro_batches": batches}


def create(namesrv: str, topic: str = TOPIC) -> None:
    async def run() -> None:
        async with Producer(namesrv=namesrv, group="pipeline_admin") as producer:
            await create_topic(producer.instance, topic, queues=8)

    anyio.run(run)


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main() -> int:
    configure_logging(level="WARNING")  # the report below is the output; the daemon logs JSON
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # everything runs on loopback
    for var in ("SPARK_LAUNCHER_OPTS", "SPARK_SUBMIT_OPTS"):  # no /tmp/hsperfdata_<user>
        os.environ.setdefault(var, "-XX:-UsePerfData")
    began = time.monotonic()
    with LocalCluster() as cluster, tempfile.TemporaryDirectory() as tmp:
        namesrv = cluster.namesrv_addr
        say(f"cluster up: NameServer {namesrv} ({time.monotonic() - began:.1f} s)")
        create(namesrv)
        out = Path(tmp) / "totals.json"
        spark = (
            SparkSession.builder.master("local[2]").appName("rocketmq-actors-pipeline")
            .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "4")
            .config("spark.ui.showConsoleProgress", "false")
            .getOrCreate()
        )  # fmt: skip
        spark.sparkContext.setLogLevel("ERROR")
        register(spark)
        try:
            messages = priced(orders(spark)).cache()
            want = expected(messages)
            daemon = subprocess.Popen(
                [sys.executable, str(HERE / "aggregator.py"), "--namesrv", namesrv,
                 "--topic", TOPIC, "--group", GROUP, "--expect", str(want["orders"]),
                 "--out", str(out)],
                stderr=open(Path(tmp) / "aggregator.log", "w"),  # noqa: SIM115
            )  # fmt: skip
            started = time.monotonic()
            publish = messages.drop("region", "total_cents").write.format("rocketmq")
            publish.option("namesrv", namesrv).option("topic", TOPIC).mode("append").save()
            published = time.monotonic() - started
            say(f"spark published {want['orders']} orders in {published:.1f} s "
                  f"({want['orders'] / published:.0f} rows/s)")  # fmt: skip
            try:
                daemon.wait(timeout=120)
            except subprocess.TimeoutExpired:
                daemon.terminate()  # graceful: it writes what it has
                daemon.wait(timeout=30)
            started = time.monotonic()
            streamed = stream_to_parquet(spark, namesrv, TOPIC, Path(tmp) / "stream")
            say(f"spark streaming read {streamed['rows']} messages back in "
                f"{streamed['micro_batches']} micro-batches to parquet in "
                f"{time.monotonic() - started:.1f} s")  # fmt: skip
        finally:
            spark.stop()
        got: dict[str, Any] = (
            json.loads(out.read_text()) if out.exists() else {"orders": 0, "by_region": {}}
        )
    say(f"consumer daemon counted {got['orders']} orders "
        f"({got.get('duplicates', 0)} duplicate deliveries ignored); "
        f"lost {want['orders'] - got['orders']}")  # fmt: skip
    for region, totals in want["by_region"].items():
        mine = got["by_region"].get(region, {})
        flag = "ok" if mine == totals else "MISMATCH"
        say(f"  {region:8} orders {totals['orders']:6}  revenue "
              f"{totals['revenue_cents'] / 100:12,.2f}  {flag}")  # fmt: skip
    same = got["orders"] == want["orders"] and got["by_region"] == want["by_region"]
    from_stream = {k: streamed[k] for k in ("orders", "by_region")}
    say(f"streamed parquet totals: {streamed['orders']} orders, "
        f"{'equal to' if from_stream == want else 'DIFFERENT from'} Spark's")  # fmt: skip
    same = same and from_stream == want
    say(f"{'PASS' if same else 'FAIL'}: totals {'match' if same else 'differ'}; "
          f"{time.monotonic() - began:.1f} s in all")  # fmt: skip
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
