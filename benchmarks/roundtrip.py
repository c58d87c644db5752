"""Request/response round trips on one connection to a real broker.

    python -m benchmarks.roundtrip [--in-flight 256] [--seconds 10]

GET_MAX_OFFSET (cheap for the broker) with ``--in-flight`` requests outstanding at all times on
one BrokerConnection; reports requests per second and latency percentiles. Starts its own local
cluster (the broker shares this machine's cores, as the target assumes). Target: >= 40k req/s.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import anyio

from rocketmq_actors.protocol.codes import RequestCode, ResponseCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.protocol.headers import GetMaxOffsetRequestHeader
from rocketmq_actors.runtime.pool import ConnectionPool
from rocketmq_actors.testing.cluster import LocalCluster

from .common import RESULTS, write_results


async def run(broker: str, in_flight: int, seconds: float, warmup: float) -> dict[str, float]:
    ext = GetMaxOffsetRequestHeader(topic="TBW102", queue_id=0).to_ext()
    latencies: list[float] = []
    done = 0
    failed = 0
    measuring = False
    stop = False

    async with ConnectionPool() as pool:
        conn = await pool.get(broker)

        async def worker() -> None:
            nonlocal done, failed
            request = conn.request
            clock = time.perf_counter
            while not stop:
                cmd = RemotingCommand.request(RequestCode.GET_MAX_OFFSET, ext)
                started = clock()
                reply = await request(cmd, 10.0)
                if measuring:
                    latencies.append(clock() - started)
                    if reply.code == ResponseCode.SUCCESS:
                        done += 1
                    else:
                        failed += 1

        async with anyio.create_task_group() as tg:
            for _ in range(in_flight):
                tg.start_soon(worker)
            await anyio.sleep(warmup)
            measuring = True
            began = time.perf_counter()
            await anyio.sleep(seconds)
            measuring = False
            elapsed = time.perf_counter() - began
            stop = True
        stats = conn.statistics()
    latencies.sort()

    def pct(p: float) -> float:
        return latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1000

    return {
        "requests_per_s": round(done / elapsed),
        "failed": failed,
        "p50_ms": round(pct(0.50), 3),
        "p99_ms": round(pct(0.99), 3),
        "requests_per_write": round(stats["requests_sent"] / max(stats["writes"], 1), 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--in-flight", type=int, default=256)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument(
        "--warmup", type=float, default=15.0, help="seconds before measuring (broker JIT warm-up)"
    )
    parser.add_argument("--broker", help="use this broker instead of starting a cluster")
    parser.add_argument("--uvloop", action="store_true", help="run on uvloop (optional extra)")
    parser.add_argument("--out", type=Path, default=RESULTS / "roundtrip.json")
    args = parser.parse_args(argv)
    if args.uvloop:
        try:
            import uvloop  # noqa: F401
        except ImportError:
            parser.error("--uvloop needs the uvloop package: pip install 'rocketmq-actors[uvloop]'")

    def measure(broker: str) -> dict[str, float]:
        options = {"use_uvloop": True} if args.uvloop else {}
        return anyio.run(
            run, broker, args.in_flight, args.seconds, args.warmup, backend_options=options
        )

    if args.broker:
        figures = measure(args.broker)
    else:
        with LocalCluster() as cluster:
            figures = measure(cluster.broker("broker-a").addr)
    write_results(
        args.out,
        {
            "event_loop": "uvloop" if args.uvloop else "asyncio",
            "in_flight": args.in_flight,
            "seconds": args.seconds,
            **figures,
            "target_requests_per_s": 40_000,
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
