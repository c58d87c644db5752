"""The Java client's side of :mod:`benchmarks.scale`: ``benchmarks/java/ScaleBench.java`` on the
cached RocketMQ jars (``rocketmq-client`` 5.3.3), one fresh JVM per measurement.

Its figures are start-up and idle costs, measured as ours are (see ``ScaleBench.java``): the
JVM is not warmed first, as a throughput comparison's is, since a consumer's start-up and its
idle cost are what a freshly started client pays. Its requests per second are counted by an
``RPCHook`` in the Java client (every request its remoting layer sends), ours at our
connections; neither counts the broker's replies. Each JVM runs with ``-XX:-UsePerfData``, its
home and temporary directory a scratch directory under the repository's ``.state/``, removed
when it ends.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import JAVA_DIR, TREE, last_json
from rocketmq_actors.protocol.codes import RequestCode

PROGRAM = JAVA_DIR / "ScaleBench.java"
SCRATCH = TREE / ".state"


def _name(code: str) -> str:
    try:
        return RequestCode(int(code)).name
    except ValueError:
        return code


def run_scale_bench(*args: object, timeout: float) -> dict[str, Any]:
    """One ``ScaleBench.java`` run: its figures, with the 1-minute load average when it
    started and its request codes named; ``{"error": ...}`` if it failed."""
    from rocketmq_actors.testing.java import java_argv

    SCRATCH.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="scale-java-", dir=SCRATCH))
    try:
        argv = java_argv(PROGRAM, *args, scratch=scratch, heap_mb=512)
        load = os.getloadavg()[0]
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout, check=False, cwd=scratch,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return {"error": f"ScaleBench.java did not end in {timeout} s"}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    try:
        figures = last_json(done.stdout, "ScaleBench.java")
    except RuntimeError as e:
        return {"error": f"{e} (exit {done.returncode}): {done.stderr[-500:]}"}
    if "idle_requests_per_s" in figures:
        figures["idle_requests_per_s"] = {
            _name(code): n for code, n in figures["idle_requests_per_s"].items()
        }
    return {"load_1m": round(load, 2), **figures}


def java_consumer(
    namesrv: str, topic: str, queues: int, sampled: int, *, idle_s: float, limit_s: float
) -> dict[str, Any]:
    """A Java push consumer of a fresh group on ``topic`` (``queues`` queues, ``sampled`` of
    them holding a message)."""
    group = f"bench_scale_java_{time.time_ns()}"
    return run_scale_bench("consumer", namesrv, topic, group, queues, sampled, idle_s, limit_s,
                           timeout=2 * limit_s + idle_s + 120)  # fmt: skip


def java_producers(
    namesrv: str, count: int, shared: bool, prefix: str, topics: int, *, idle_s: float
) -> dict[str, Any]:
    """``count`` Java producers in one JVM (on one client instance with ``shared``), each sending
    one message to each of the topics ``prefix0`` .. ``prefix{topics - 1}``."""
    return run_scale_bench("producers", namesrv, count, "true" if shared else "false", prefix,
                           topics, idle_s, timeout=idle_s + 600)  # fmt: skip
