"""Sync-send latency, ours against the Java client, in alternating windows of one run.

    python -m benchmarks.latency [--windows 8] [--seconds 3] [--warmup 10] [--namesrv ADDR]

Path (a) of the comparison: synchronous 1 KiB sends, one in flight. The build VM's speed swings
about 2x within minutes, so one long run per client compares two different machines. Here both
clients stay up (``benchmarks/java/SyncLatencyBench.java`` waits on stdin between windows) and
take turns in short windows, the order flipped every pair (ours-Java, Java-ours, ...), so that
every phase of the VM falls on both. Each side's latencies from all its windows are pooled; the
same percentile rule applies to both. Every window's p50 is kept in the output too.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
from pathlib import Path
from typing import Any

import anyio

from rocketmq_actors.producer import Message, Producer, create_topic

from .common import JAVA_DIR, RESULTS, on_cluster, write_results
from .producer import BODY, QUEUES, _percentiles


async def _window(producer: Producer, message: Message, seconds: float) -> list[float]:
    latencies: list[float] = []
    stop = time.monotonic() + seconds
    while time.monotonic() < stop:
        started = time.perf_counter()
        await producer.send(message)
        latencies.append(time.perf_counter() - started)
    return latencies


class _JavaSide:
    """The Java program, driven one window at a time over its stdin."""

    def __init__(self, namesrv: str, topic: str, warmup: float) -> None:
        from rocketmq_actors.testing.jars import find_java, resolve_server_jars

        lib = resolve_server_jars()
        self._proc = subprocess.Popen(
            [find_java(), "-Xmx512m", "-cp", f"{lib}/*",
             str(JAVA_DIR / "SyncLatencyBench.java"), namesrv, topic, str(warmup)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )  # fmt: skip

    def _reply(self) -> dict[str, Any]:
        assert self._proc.stdout is not None
        while line := self._proc.stdout.readline():
            if line.startswith("{"):
                reply: dict[str, Any] = json.loads(line)
                return reply
        raise RuntimeError(f"SyncLatencyBench.java exited {self._proc.wait()}")

    def ready(self) -> None:
        self._reply()

    def window(self, seconds: float) -> list[float]:
        assert self._proc.stdin is not None
        self._proc.stdin.write(f"window {seconds}\n")
        self._proc.stdin.flush()
        return [us / 1e6 for us in self._reply()["latencies_us"]]

    def close(self) -> None:
        if self._proc.stdin is not None and not self._proc.stdin.closed:
            self._proc.stdin.write("quit\n")
            self._proc.stdin.close()
        try:
            self._proc.wait(60)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()


async def paired(
    namesrv: str, windows: int, seconds: float, warmup: float, topic: str | None = None
) -> dict[str, Any]:
    """``windows`` windows per side, alternating; pooled and per-window figures of each."""
    topic = topic or f"bench_latency_{int(time.time())}"
    java = None
    ours: list[float] = []
    theirs: list[float] = []
    per_window: list[dict[str, Any]] = []
    async with Producer(namesrv=namesrv, group="bench_latency") as producer:
        await create_topic(producer.instance, topic, queues=QUEUES)
        java = _JavaSide(namesrv, topic, warmup)
        try:
            await anyio.to_thread.run_sync(java.ready)  # its warm-up, alone on the machine
            message = Message(topic=topic, body=BODY)
            await _window(producer, message, warmup)  # then ours, alone
            for i in range(windows):
                for side in ("ours", "java") if i % 2 == 0 else ("java", "ours"):
                    if side == "ours":
                        got = await _window(producer, message, seconds)
                        ours += got
                    else:
                        got = await anyio.to_thread.run_sync(java.window, seconds)
                        theirs += got
                    per_window.append({"side": side, **_percentiles(got)})
        finally:
            await anyio.to_thread.run_sync(java.close)
    return {
        "windows": windows,
        "window_seconds": seconds,
        "ours": {"messages": len(ours), **_percentiles(ours)},
        "java": {"messages": len(theirs), **_percentiles(theirs)},
        "per_window": per_window,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--windows", type=int, default=8, help="windows per side")
    parser.add_argument("--seconds", type=float, default=3.0, help="length of one window")
    parser.add_argument("--warmup", type=float, default=10.0)
    parser.add_argument("--namesrv", help="use this cluster instead of starting one")
    parser.add_argument("--out", type=Path, default=RESULTS / "latency.json")
    args = parser.parse_args(argv)

    def measure(namesrv: str) -> dict[str, Any]:
        return anyio.run(paired, namesrv, args.windows, args.seconds, args.warmup)

    write_results(args.out, on_cluster(args.namesrv, measure))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
