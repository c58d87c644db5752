"""What the launcher's ``jit`` costs: a cluster's start with C1 only ("quick", what the tests
use) against C1 and C2 ("full", what the benchmarks use).

    python -m benchmarks.jvmstart [--rounds 5] [--sends 5000]

Rounds alternate between the two, one cluster (a NameServer and a broker, 5.3.3) each. A round
reports the CPU seconds its JVMs used until the cluster was ready, then while this process sent
``--sends`` 1 KiB messages (16 at a time) and the broker's send rate, then over 10 idle seconds.
The load average and the calibration are written beside the figures.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path
from typing import Literal

import anyio

from benchmarks.common import alternating, process_cpu_s, process_tree, run_main, write_results
from rocketmq_actors.producer import Message, Producer
from rocketmq_actors.testing.cluster import ClusterSpec, LocalCluster

RESULTS = Path(__file__).resolve().parent / "results" / "jvmstart.json"
IDLE_S = 10.0


def jvm_cpu(cluster: LocalCluster) -> float:
    total = 0.0
    for info in cluster.servers.values():
        for pid in process_tree(info.pid) if info.pid else {}:
            total += process_cpu_s(pid) or 0.0
    return total


async def send(namesrv: str, count: int) -> float:
    began = time.perf_counter()
    async with Producer(namesrv=namesrv, group="bench_jvmstart") as producer:
        left = count

        async def worker() -> None:
            nonlocal left
            while left > 0:
                left -= 1
                await producer.send(Message(topic="bench_jvmstart", body=b"x" * 1024))

        async with anyio.create_task_group() as tg:
            for _ in range(16):
                tg.start_soon(worker)
    return count / (time.perf_counter() - began)


def one_round(jit: Literal["quick", "full"], sends: int) -> dict[str, float]:
    began = time.perf_counter()
    with LocalCluster(ClusterSpec(jit=jit)) as cluster:
        ready_s = time.perf_counter() - began
        at_ready = jvm_cpu(cluster)
        rate = anyio.run(send, cluster.namesrv_addr, sends)
        after_sends = jvm_cpu(cluster)
        time.sleep(IDLE_S)  # (a benchmark's window, not a synchronisation)
        idle = jvm_cpu(cluster) - after_sends
    return {
        "ready_s": round(ready_s, 2),
        "start_cpu_s": round(at_ready, 2),
        "send_cpu_s": round(after_sends - at_ready, 2),
        "sends_per_s": round(rate),
        "idle_cpu_per_s": round(idle / IDLE_S, 3),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sends", type=int, default=5000)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    rounds: dict[str, list[dict[str, float]]] = {"quick": [], "full": []}
    for jit in alternating(args.rounds, "quick", "full"):
        rounds[jit].append(one_round(jit, args.sends))  # type: ignore[arg-type]
    medians = {
        jit: {key: round(statistics.median(r[key] for r in runs), 3) for key in runs[0]}
        for jit, runs in rounds.items()
    }
    write_results(args.out, {
        "server": "5.3.3", "sends": args.sends, "load_average_before": load_before,
        "load_average_after": os.getloadavg(), "median": medians, "rounds": rounds,
    })  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(run_main(main))
