"""Chaos: ``kill -9`` one of two masters under a running Spark streaming query (the
``rocketmq`` source into the file sink), on a local Spark and on a multi-process
``local-cluster``. The query must outlive the broker: planning keeps the dead broker's queues
where they were, a task pulling from it waits (``pullRetryTimeoutMs``) until it is back, and
once it is, every message acknowledged to the producer is in the sink exactly once."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from rocketmq_actors.producer import Producer, ProducerOptions, create_topic
from rocketmq_actors.testing.cluster import LocalCluster
from rocketmq_actors.testing.faults import Outcome, QueueChecker
from tests.spark.jobs import committed_rows, job_env, job_events

from .conftest import ChaosReport
from .workload import produce

pytestmark = [pytest.mark.integration, pytest.mark.chaos, pytest.mark.slow, pytest.mark.spark]

STREAM_JOB = Path(__file__).parents[1] / "spark" / "stream_job.py"
BEFORE, DURING, AFTER = range(0, 3000), range(3000, 4000), range(4000, 4500)


def _send(namesrv: str, topic: str, keys: range, checker: QueueChecker) -> None:
    async def run() -> None:
        options = ProducerOptions(send_timeout=3.0, latency_fault_tolerance=True)
        async with Producer(namesrv=namesrv, options=options) as producer:
            await create_topic(producer.instance, topic, queues=4)  # (on each master)
            await produce(producer, topic, keys, checker)

    anyio.run(run)


@pytest.mark.chaos_full
@pytest.mark.timeout(1500)
@pytest.mark.parametrize("master", ["local[2]", "local-cluster[2,1,1024]"])
def test_a_stream_outlives_a_killed_master_and_writes_every_message_once(
    master: str, rocketmq_two_masters: LocalCluster, unique_topic: str, tmp_path: Path,
    chaos_report: ChaosReport,
) -> None:  # fmt: skip
    namesrv = rocketmq_two_masters.namesrv_addr
    checker = QueueChecker()
    _send(namesrv, unique_topic, BEFORE, checker)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    argv = [sys.executable, str(STREAM_JOB), master, namesrv, unique_topic,
            str(tmp_path / "checkpoint"), str(tmp_path / "out"), str(scratch),
            "--max-offsets", "300"]  # fmt: skip
    env = job_env()
    with (tmp_path / "job.log").open("w") as log:
        job = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log, text=True, env=env,
                               start_new_session=True)  # fmt: skip
    try:
        seen = job_events(job, lambda e: e.get("batch", -1) >= 1, timeout=300)
        rocketmq_two_masters.kill_broker("broker-b")
        assert sum(e.get("rows", 0) for e in seen) < len(BEFORE)  # (killed mid-backlog)
        killed_at = time.monotonic()
        _send(namesrv, unique_topic, DURING, checker)  # (broker-a takes them)
        rocketmq_two_masters.restart_broker("broker-b")
        restarted_in = time.monotonic() - killed_at
        assert job.poll() is None, "the query died with the broker"
        _send(namesrv, unique_topic, AFTER, checker)
        acked = {str(k) for k, outcome in checker.outcomes.items() if outcome is Outcome.OK}
        rows = sum(e.get("rows", 0) for e in seen)
        wanted = len(acked)  # (sends of unknown outcome may add rows: then one batch more)

        def read_up_to_wanted(event: dict[str, object]) -> bool:
            nonlocal rows
            rows += int(event.get("rows", 0))  # type: ignore[call-overload]
            return bool(rows >= wanted)

        while True:
            job_events(job, read_up_to_wanted, timeout=600)
            if acked <= {row["key"] for row in committed_rows(tmp_path / "out")}:
                break
            wanted = rows + 1
        (scratch / "stop").touch()
        job_events(job, lambda e: e.get("stopped") is True, timeout=120)
        assert job.wait(timeout=120) == 0
    finally:
        if job.poll() is None:
            os.killpg(job.pid, 9)
            job.wait()
    for row in committed_rows(tmp_path / "out"):
        assert row["body"] == row["key"]
        checker.record_receive(int(row["key"]))
    result = checker.check()
    chaos_report.record(
        f"kill -9 one of two masters under a Spark stream ({master.partition('[')[0]})", result,
        recover_s=restarted_in, note="the query outlived it; every message once after restart",
    )  # fmt: skip
    assert result.ok and result.duplicates == 0, result
