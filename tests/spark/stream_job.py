"""A streaming query as a driver process of its own: RocketMQ -> parquet files with a
checkpoint. tests/spark/test_stream_real.py kills it mid-batch and runs it again.

    python stream_job.py MASTER NAMESRV TOPIC CHECKPOINT OUTPUT SCRATCH [--max-offsets N]
        [--available-now]

It prints one JSON line per finished micro-batch (``{"batch": 3, "rows": 150}``) and
``{"done": true}`` when an AvailableNow query ends. A file ``stop`` in SCRATCH stops a
streaming query (``{"stopped": true}``). No PYSPARK_PYTHON: register() chooses.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.listener import StreamingQueryListener

from rocketmq_actors.spark import register

#: the JIT of the test Spark JVMs: C1 only (see tests/spark/conftest.py)
QUICK_JIT = "-XX:TieredStopAtLevel=1"


def say(line: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


class Progress(StreamingQueryListener):
    def onQueryStarted(self, event: Any) -> None:
        say({"started": str(event.id)})

    def onQueryProgress(self, event: Any) -> None:
        progress = event.progress
        if progress.numInputRows:
            say({"batch": progress.batchId, "rows": progress.numInputRows})

    def onQueryIdle(self, event: Any) -> None:
        pass

    def onQueryTerminated(self, event: Any) -> None:
        pass


def main() -> int:
    parser = argparse.ArgumentParser()
    for name in ("master", "namesrv", "topic", "checkpoint", "output", "scratch"):
        parser.add_argument(name)
    parser.add_argument("--max-offsets", type=int)
    parser.add_argument("--available-now", action="store_true")
    args = parser.parse_args()
    os.environ["SPARK_WORKER_DIR"] = os.path.join(args.scratch, "work")  # local-cluster logs
    spark = (
        SparkSession.builder.master(args.master).appName("rocketmq-stream-job")
        .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2").config("spark.executor.memory", "512m")
        .config("spark.local.dir", args.scratch)
        .config("spark.executor.extraJavaOptions",
                f"-XX:-UsePerfData {QUICK_JIT} -Djava.io.tmpdir={args.scratch}")
        .config("spark.driver.extraJavaOptions",
                f"-XX:-UsePerfData {QUICK_JIT} -Djava.io.tmpdir={args.scratch}")
        .getOrCreate()
    )  # fmt: skip
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    spark.streams.addListener(Progress())
    source = (
        spark.readStream.format("rocketmq").option("namesrv", args.namesrv)
        .option("topic", args.topic).option("startingOffsets", "earliest")
    )  # fmt: skip
    if args.max_offsets:
        source = source.option("maxOffsetsPerTrigger", str(args.max_offsets))
    rows = source.load().select(
        "broker_name", "queue_id", "queue_offset", F.col("keys")[0].alias("key"),
        F.col("body").cast("string").alias("body"),
    )  # fmt: skip
    writer = rows.writeStream.format("parquet").option("path", args.output)
    writer = writer.option("checkpointLocation", args.checkpoint)
    if args.available_now:
        query = writer.trigger(availableNow=True).start()
        query.awaitTermination()
        say({"done": True})
    else:
        query = writer.trigger(processingTime="0 seconds").start()
        stop = os.path.join(args.scratch, "stop")  # a test's way to end the query cleanly
        while not query.awaitTermination(1):
            if os.path.exists(stop):
                query.stop()
                say({"stopped": True})
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
