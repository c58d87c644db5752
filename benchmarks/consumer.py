"""Consumer throughput over a pre-filled topic, and memory under a slow handler.

    python -m benchmarks.consumer [--messages 200000] [--slow-seconds 20] [--uvloop]

(a) a PushConsumer (fresh group, from the first offset, a handler that only counts) drains a
topic pre-filled with ``--messages`` 1 KiB messages over 8 queues: messages/s; (b) the same
with PullConsumer.getmany; (c) a PushConsumer whose handler takes 10 ms runs over the same
backlog for ``--slow-seconds``: this process's RSS (VmRSS) is sampled every 0.25 s and reported
with the messages the consumer held in its process queues; (d) the Java client's
DefaultMQPushConsumer (benchmarks/java/ConsumeBench.java, 20 consume threads) drains the same
topic with a fresh group, and the Python/Java ratio of (a) is reported. Starts its own local
cluster.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import anyio

from rocketmq_actors.consumer.pull import OffsetReset, PullConsumer, PullOptions
from rocketmq_actors.consumer.push import ConsumeFrom, PushConsumer, PushOptions
from rocketmq_actors.extras import uvloop_options
from rocketmq_actors.producer import Message, Producer, create_topic
from rocketmq_actors.protocol.records import MessageExt

from .common import RESULTS, on_cluster, run_java, run_main, write_results

BODY = b"x" * 1024
QUEUES = 8


def rss_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    return 0.0


async def prefill(namesrv: str, topic: str, count: int) -> float:
    began = time.perf_counter()
    async with Producer(namesrv=namesrv, group="bench_consumer_feed") as producer:
        await create_topic(producer.instance, topic, queues=QUEUES)
        batch = [Message(topic=topic, body=BODY) for _ in range(32)]
        left = count

        async def worker() -> None:
            nonlocal left
            while left > 0:
                size = min(32, left)
                left -= size
                await producer.send_batch(batch[:size])

        async with anyio.create_task_group() as tg:
            for _ in range(16):
                tg.start_soon(worker)
    return time.perf_counter() - began


async def push_drain(namesrv: str, topic: str, count: int) -> dict[str, Any]:
    done = anyio.Event()
    seen = 0
    first_at = 0.0
    first_cpu = 0.0

    async def handle(message: MessageExt) -> None:
        nonlocal seen, first_at, first_cpu
        if not seen:
            first_at = time.perf_counter()
            first_cpu = time.process_time()  # this process, every thread
        seen += 1
        if seen >= count:
            done.set()

    began = time.perf_counter()
    async with PushConsumer(
        group=f"bench_push_{time.time_ns()}",
        subscriptions={topic: "*"},
        handler=handle,
        namesrv=namesrv,
        options=PushOptions(consume_from=ConsumeFrom.FIRST_OFFSET),
    ):  # fmt: skip
        with anyio.fail_after(600):
            await done.wait()
        end = time.perf_counter()
        end_cpu = time.process_time()
    elapsed, first_s = end - began, first_at - began
    return {"messages": seen, "seconds": round(elapsed, 2), "msgs_per_s": round(seen / elapsed),
            "first_message_s": round(first_s, 2),
            "msgs_per_s_from_first": round(seen / (elapsed - first_s)),
            "cpu_s_from_first": round(end_cpu - first_cpu, 3)}  # fmt: skip


def java_drain(namesrv: str, topic: str, count: int) -> dict[str, Any]:
    """The Java client's DefaultMQPushConsumer on the same topic (benchmarks/java)."""
    (figures,) = run_java("ConsumeBench", namesrv, topic, f"bench_java_{time.time_ns()}", count)
    return figures


def java_slow_handler(namesrv: str, topic: str, seconds: float) -> dict[str, Any]:
    """The Java client with the same 10 ms handler, 20 threads, over the same backlog."""
    group = f"bench_java_slow_{time.time_ns()}"
    (figures,) = run_java("ConsumeBench", namesrv, topic, group, 0, 10, seconds)
    return figures


async def pull_drain(namesrv: str, topic: str, count: int) -> dict[str, Any]:
    seen = 0
    began = time.perf_counter()
    async with PullConsumer(
        group=f"bench_pull_{time.time_ns()}", topics=[topic], namesrv=namesrv,
        options=PullOptions(auto_offset_reset=OffsetReset.EARLIEST),
    ) as consumer:  # fmt: skip
        with anyio.fail_after(600):
            while seen < count:
                for records in (await consumer.getmany(timeout=1.0)).values():
                    seen += len(records)
        elapsed = time.perf_counter() - began
    return {"messages": seen, "seconds": round(elapsed, 2), "msgs_per_s": round(seen / elapsed)}


async def slow_handler_memory(namesrv: str, topic: str, seconds: float) -> dict[str, Any]:
    consumed = 0

    async def handle(message: MessageExt) -> None:
        nonlocal consumed
        await anyio.sleep(0.01)
        consumed += 1

    baseline = rss_mb()
    samples: list[float] = []
    cached: list[int] = []
    async with PushConsumer(
        group=f"bench_slow_{time.time_ns()}",
        subscriptions={topic: "*"},
        handler=handle,
        namesrv=namesrv,
        options=PushOptions(consume_from=ConsumeFrom.FIRST_OFFSET),
    ) as consumer:  # fmt: skip
        stop = time.monotonic() + seconds
        while time.monotonic() < stop:
            await anyio.sleep(0.25)
            samples.append(rss_mb())
            cached.append(sum(pq.count for pq in consumer._group.owned_queues().values()))
    return {
        "handler_ms": 10,
        "concurrency": 20,
        "seconds": seconds,
        "consumed": consumed,
        "rss_before_mb": baseline,
        "rss_max_mb": max(samples),
        "rss_last_mb": samples[-1],
        "cached_messages_max": max(cached),
        "cached_limit": QUEUES * 1000,
    }


async def bench(namesrv: str, messages: int, slow_seconds: float) -> dict[str, Any]:
    topic = f"bench_consume_{int(time.time())}"
    fill = await prefill(namesrv, topic, messages)
    push = await push_drain(namesrv, topic, messages)
    java = await anyio.to_thread.run_sync(java_drain, namesrv, topic, messages)
    return {
        "prefill_seconds": round(fill, 2),
        "push_concurrent": push,
        "java_push_concurrent": java,
        "python_to_java_ratio": round(push["msgs_per_s"] / java["msgs_per_s"], 2),
        "pull_getmany": await pull_drain(namesrv, topic, messages),
        "slow_handler": await slow_handler_memory(namesrv, topic, slow_seconds),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--slow-seconds", type=float, default=20.0)
    parser.add_argument("--uvloop", action="store_true")
    parser.add_argument("--namesrv", help="use this cluster instead of starting one")
    parser.add_argument("--out", type=Path, default=RESULTS / "consumer.json")
    parser.add_argument(
        "--slow-only", metavar="TOPIC",
        help="only the slow-handler memory run over TOPIC (in a fresh process; one JSON line)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    options = uvloop_options(args.uvloop)  # MissingExtra names the extra
    if args.slow_only:
        if not args.namesrv:
            parser.error("--slow-only needs --namesrv")
        slow = anyio.run(slow_handler_memory, args.namesrv, args.slow_only, args.slow_seconds)
        sys.stdout.write(json.dumps(slow) + "\n")
        return 0

    def measure(namesrv: str) -> dict[str, Any]:
        return anyio.run(bench, namesrv, args.messages, args.slow_seconds,
                         backend_options=options)  # fmt: skip

    figures = on_cluster(args.namesrv, measure)
    write_results(
        args.out,
        {"event_loop": "uvloop" if args.uvloop else "asyncio", "message_bytes": len(BODY),
         "queues": QUEUES, **figures},
    )  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(run_main(main))
