"""Helpers for tests that run a Spark job as a process of its own (tests/spark/stream_job.py):
its JSON lines as events, and the rows its file sink committed."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from tests.processes import job_events
from tests.spark.stream_job import QUICK_JIT

__all__ = ["committed_rows", "job_env", "job_events"]


def job_env() -> dict[str, str]:
    """The environment of a job's process: Spark's launcher and driver JVMs write no
    /tmp/hsperfdata_<user> (HotSpot writes its perf data under /tmp whatever
    java.io.tmpdir says) and compile with C1 only; no PYSPARK_PYTHON (register() chooses)."""
    env = {k: v for k, v in os.environ.items() if k != "PYSPARK_PYTHON"}
    for name in ("SPARK_LAUNCHER_OPTS", "SPARK_SUBMIT_OPTS"):
        env.setdefault(name, f"-XX:-UsePerfData {QUICK_JIT}")
    return env


def committed_rows(output: Path) -> list[dict[str, Any]]:
    """The rows of the parquet files the file sink at ``output`` committed: those its
    ``_spark_metadata`` log adds (a stopped or killed batch's files are left out, as Spark
    leaves them out)."""
    paths: set[str] = set()
    for entry in (output / "_spark_metadata").iterdir():
        if entry.name.startswith("."):  # (checksums: .0.crc)
            continue
        for line in entry.read_text().splitlines()[1:]:  # (the first is the version, "v1")
            record = json.loads(line)
            if record.get("action") == "add":
                paths.add(record["path"].removeprefix("file://"))
    return [row for path in sorted(paths) for row in pq.read_table(path).to_pylist()]
