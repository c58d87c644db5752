"""One local SparkSession (2 worker threads, up to 3 attempts per task) for the spark tests,
stopped after the last of them (package scope: its JVM's idle CPU is not spent on the rest of
the session)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from rocketmq_actors.spark import register
from tests.spark.stream_job import QUICK_JIT

# no /tmp/hsperfdata_<user> left behind by Spark's launcher and driver JVMs (HotSpot writes its
# perf data under /tmp whatever java.io.tmpdir says): for every Spark test, subprocesses too.
# The driver compiles with C1 only, as the test clusters' JVMs do (ClusterSpec.jit): a test's
# short queries never repay C2's compilations, on the two cores the whole suite shares
for _var in ("SPARK_LAUNCHER_OPTS", "SPARK_SUBMIT_OPTS"):
    os.environ.setdefault(_var, f"-XX:-UsePerfData {QUICK_JIT}")


@pytest.fixture(scope="package")
def spark() -> Iterator[SparkSession]:
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    session = (
        SparkSession.builder.master("local[2,3]")  # 2 threads; a failed task is tried 3 times
        .appName("rocketmq-actors-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.driver.memory", "1g")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    register(session)
    yield session
    session.stop()
