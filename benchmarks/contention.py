"""Consume on a shared machine: both clients' push-consume drains alone and beside busy
processes, in one rotation.

    python -m benchmarks.contention [--busy 2] [--drains 2] [--warmup 30] [--backlog 100000]

Against the C null broker (``benchmarks.nullbroker``, 4 queues of ``--backlog`` messages per
drain, a fresh topic and group each), each client drains until it has drained for ``--warmup``
seconds (Java in one JVM throughout, as ``benchmarks.nullbroker``'s (d)); then ``--drains``
rounds, each client in turns (ABBA), each turn once alone and once beside ``--busy`` busy
loops (``python -c 'while True: pass'``, what ``make test-busy`` puts beside the tests).

Per drain: messages a second, CPU per message, and the cores the client's process took over
its drain (its CPU seconds, every thread, over the seconds from its first message to its
last), the busy loops' cores, the null broker's CPU per message, the load average before it
and a calibration after it. The summary gives each condition's mean
per client and the ratio ours / Java of throughput. Linux's scheduler shares the cores among
runnable threads, not processes: a one-thread event loop beside busy loops gets a thread's
share, a client of many threads gets more; the ``cores`` figures show the share each took.
Writes ``benchmarks/results/contention.json``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio

from benchmarks import consumer
from benchmarks.common import (
    RESULTS,
    alternating,
    calibration_us,
    process_cpu_s,
    run_main,
    write_results,
)
from benchmarks.nullbroker import JavaConsumer, NullBroker

OUT = RESULTS / "contention.json"
QUEUES = 4


class BusyLoops:
    """``count`` processes spinning on a core each, for a ``with`` block."""

    def __init__(self, count: int) -> None:
        self.count = count
        self._procs: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> BusyLoops:
        spin = [sys.executable, "-c", "while True: pass"]
        self._procs = [subprocess.Popen(spin) for _ in range(self.count)]
        return self

    def cpu_s(self) -> float:
        return sum(process_cpu_s(p.pid) or 0.0 for p in self._procs)

    def __exit__(self, *exc: object) -> None:
        for proc in self._procs:
            proc.kill()
            proc.wait()


def _drain(side: str, java: JavaConsumer, namesrv: str, messages: int) -> dict[str, Any]:
    topic = f"bench_contention_{time.time_ns()}"
    if side == "ours":
        return anyio.run(consumer.push_drain, namesrv, topic, messages)
    return java.drain(topic, messages)


def _figures(drain: dict[str, Any]) -> dict[str, Any]:
    active = drain["seconds"] - drain["first_message_s"]
    return {
        "messages": drain["messages"],
        "msgs_per_s": drain["msgs_per_s_from_first"],
        "cpu_us_per_msg": round(drain["cpu_s_from_first"] / drain["messages"] * 1e6, 2),
        "cores": round(drain["cpu_s_from_first"] / active, 2),
    }


def measure(args: argparse.Namespace) -> dict[str, Any]:
    messages = args.backlog * QUEUES
    drains: list[dict[str, Any]] = []
    with NullBroker(queues=QUEUES, backlog=args.backlog) as broker:
        java = JavaConsumer(broker.addr)
        try:
            for side in ("java", "ours"):
                warmed = 0.0
                while warmed < args.warmup:
                    drain = _drain(side, java, broker.addr, messages)
                    warmed += drain["seconds"]
                    drains.append({"side": side, "phase": "warm-up", **_figures(drain)})
            for side in alternating(args.drains, "ours", "java"):
                for busy in (0, args.busy):
                    load = round(os.getloadavg()[0], 2)
                    broker_before = process_cpu_s(broker.pid) or 0.0
                    with BusyLoops(busy) as loops:
                        began = time.monotonic()
                        drain = _drain(side, java, broker.addr, messages)
                        loop_cores = loops.cpu_s() / (time.monotonic() - began)
                    broker_cpu = (process_cpu_s(broker.pid) or 0.0) - broker_before
                    drains.append({
                        "side": side, "phase": "measured", "busy_loops": busy,
                        "busy_loops_cores": round(loop_cores, 2), "load_before": load,
                        "calibration_us": round(calibration_us(), 2), **_figures(drain),
                        "null_broker_cpu_us_per_msg": round(broker_cpu / messages * 1e6, 2),
                    })  # fmt: skip
        finally:
            java.close()
    return {"summary": summary(drains, args.busy), "drains": drains}


def summary(drains: list[dict[str, Any]], busy: int) -> dict[str, Any]:
    """Each condition's mean figures per client, and ours / Java of throughput."""
    result: dict[str, Any] = {}
    for name, loops in (("alone", 0), (f"beside_{busy}_busy_loops", busy)):
        condition: dict[str, Any] = {}
        for side in ("ours", "java"):
            mine = [
                d for d in drains
                if d["phase"] == "measured" and d["side"] == side and d["busy_loops"] == loops
            ]  # fmt: skip
            condition[side] = {
                key: round(statistics.fmean(d[key] for d in mine), 2)
                for key in ("msgs_per_s", "cpu_us_per_msg", "cores", "null_broker_cpu_us_per_msg")
            }
        java_rate = condition["java"]["msgs_per_s"]
        condition["throughput_ratio_ours_over_java"] = (
            round(condition["ours"]["msgs_per_s"] / java_rate, 2) if java_rate else None
        )
        result[name] = condition
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--busy", type=int, default=2, help="busy loops beside a drain")
    parser.add_argument("--drains", type=int, default=2, help="rounds (ABBA) per condition")
    parser.add_argument("--warmup", type=float, default=30.0, help="seconds per client")
    parser.add_argument("--backlog", type=int, default=100_000, help="messages per queue")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    started = time.monotonic()
    figures = measure(args)
    figures["settings"] = {
        "busy_loops": args.busy, "rounds": args.drains, "warmup": args.warmup,
        "queues": QUEUES, "messages_per_drain": args.backlog * QUEUES,
        "cores": os.cpu_count(), "took_seconds": round(time.monotonic() - started),
        "null_broker": "benchmarks/c/nullbroker.c",
    }  # fmt: skip
    write_results(args.out, figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(run_main(main))
