"""The main job's pipeline (examples/main_job.py + examples/aggregator.py) on the shared
cluster and Spark session, with fewer orders."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from pyspark.sql import SparkSession

pytestmark = [pytest.mark.integration, pytest.mark.spark]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_spark_publishes_and_the_daemon_totals_match(
    spark: SparkSession, rocketmq_namesrv: str, unique_topic: str, unique_group: str,
    tmp_path: Path,
) -> None:  # fmt: skip
    job = _load("main_job")
    job.create(rocketmq_namesrv, unique_topic)
    messages = job.priced(job.orders(spark, 5000)).cache()
    want = job.expected(messages)
    assert want["orders"] == 4000 and len(want["by_region"]) == 5  # 1 in 5 is cancelled
    out = tmp_path / "totals.json"
    daemon = subprocess.Popen(
        [sys.executable, str(EXAMPLES / "aggregator.py"), "--namesrv", rocketmq_namesrv,
         "--topic", unique_topic, "--group", unique_group, "--expect", str(want["orders"]),
         "--out", str(out)],
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        (messages.drop("region", "total_cents").write.format("rocketmq")
            .option("namesrv", rocketmq_namesrv).option("topic", unique_topic)
            .mode("append").save())  # fmt: skip
        _, stderr = daemon.communicate(timeout=120)
    finally:
        daemon.kill()
    assert daemon.returncode == 0, stderr[-2000:]
    got = json.loads(out.read_text())
    assert got["orders"] == want["orders"]
    assert got["by_region"] == want["by_region"]
    assert '"event": "aggregator.done"' in stderr  # JSON logs on stderr
    # the streaming leg: the topic read back into parquet by a streaming query
    streamed = job.stream_to_parquet(spark, rocketmq_namesrv, unique_topic, tmp_path / "s",
                                     per_trigger=1500)  # fmt: skip
    assert {k: streamed[k] for k in ("orders", "by_region")} == want
    assert streamed["rows"] >= 4000 and streamed["micro_batches"] >= 3
