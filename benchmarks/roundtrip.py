"""Request/response round trips on one connection to a real broker.

    python -m benchmarks.roundtrip [--in-flight 256] [--seconds 10] [--rounds 3] [--uvloop]

GET_MAX_OFFSET (cheap for the broker) with ``--in-flight`` requests outstanding at all times on
one BrokerConnection; reports requests per second and latency percentiles. Starts its own local
cluster (the broker shares this machine's cores, as the target assumes). Target: >= 40k req/s.
"""

from __future__ import annotations

import argparse
import time
from functools import partial
from pathlib import Path
from typing import Any

import anyio

from rocketmq_actors.extras import MissingExtra, uvloop_options
from rocketmq_actors.protocol.codes import RequestCode, ResponseCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.protocol.headers import GetMaxOffsetRequestHeader
from rocketmq_actors.runtime.pool import ConnectionPool
from rocketmq_actors.testing.cluster import ClusterSpec, LocalCluster

from .common import RESULTS, percentiles, process_cpu_s, run_main, write_results


async def run(
    broker: str,
    *,
    in_flight: int,
    seconds: float,
    warmup: float,
    rounds: int = 1,
    broker_pid: int | None = None,
) -> dict[str, Any]:
    """``rounds`` measuring windows of ``seconds`` each after ``warmup``, on one connection;
    the headline figures are the median round's (the build VM's speed varies within minutes,
    so a single window can be far off either way)."""
    ext = GetMaxOffsetRequestHeader(topic="TBW102", queue_id=0).to_ext()
    latencies: list[float] = []
    done = 0
    failed = 0
    measuring = False
    stop = False
    windows: list[dict[str, Any]] = []

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
            for _ in range(rounds):
                done = 0
                latencies = []
                measuring = True
                began = time.perf_counter()
                cpu_began = time.process_time()
                broker_began = process_cpu_s(broker_pid)
                await anyio.sleep(seconds)
                measuring = False
                elapsed = time.perf_counter() - began
                cpu = time.process_time() - cpu_began
                broker_end = process_cpu_s(broker_pid)
                windows.append(
                    _window(
                        done=done, elapsed=elapsed, cpu=cpu, broker_began=broker_began,
                        broker_end=broker_end, latencies=latencies,
                    )
                )  # fmt: skip
            stop = True
        stats = conn.statistics()
    median = sorted(windows, key=lambda w: w["requests_per_s"])[len(windows) // 2]
    return {
        **median,
        "failed": failed,
        "rounds": [w["requests_per_s"] for w in windows],
        "requests_per_write": round(stats["requests_sent"] / max(stats["writes"], 1), 1),
    }


def _window(
    *,
    done: int,
    elapsed: float,
    cpu: float,
    broker_began: float | None,
    broker_end: float | None,
    latencies: list[float],
) -> dict[str, Any]:
    return {
        "requests_per_s": round(done / elapsed),
        **percentiles(latencies),
        # CPU per request on each side: steadier than requests/s on a VM whose speed varies
        "client_cpu_us_per_request": round(cpu / max(done, 1) * 1e6, 2),
        "broker_cpu_us_per_request": (
            round((broker_end - broker_began) / max(done, 1) * 1e6, 2)
            if broker_began is not None and broker_end is not None
            else None
        ),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--in-flight", type=int, default=256)
    parser.add_argument("--seconds", type=float, default=10.0, help="length of one round")
    parser.add_argument("--rounds", type=int, default=3, help="report the median round")
    parser.add_argument(
        "--warmup", type=float, default=15.0, help="seconds before measuring (broker JIT warm-up)"
    )
    parser.add_argument("--broker", help="use this broker instead of starting a cluster")
    parser.add_argument("--broker-pid", type=int, help="the --broker's pid (for its CPU time)")
    parser.add_argument("--uvloop", action="store_true", help="run on uvloop (optional extra)")
    parser.add_argument("--out", type=Path, default=RESULTS / "roundtrip.json")
    args = parser.parse_args(argv)
    if args.uvloop:
        try:
            uvloop_options()
        except MissingExtra as exc:
            parser.error(str(exc))

    def measure(broker: str, pid: int | None) -> dict[str, Any]:
        options = {"use_uvloop": True} if args.uvloop else {}
        job = partial(
            run, broker, in_flight=args.in_flight, seconds=args.seconds, warmup=args.warmup,
            rounds=args.rounds, broker_pid=pid,
        )  # fmt: skip
        return anyio.run(job, backend_options=options)

    if args.broker:
        figures = measure(args.broker, args.broker_pid)
    else:
        with LocalCluster(ClusterSpec(jit="full")) as cluster:
            info = cluster.broker("broker-a")
            figures = measure(info.addr, info.pid)
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
    raise SystemExit(run_main(main))
