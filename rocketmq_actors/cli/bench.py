"""``rocketmq-actors bench``: quick throughput figures against a cluster.

Sends ``--count`` messages of ``--size`` bytes with ``--concurrency`` in flight (submit),
then reads them back with a fresh pull-consumer group. Prints the figures (``--json``: one
line). For comparable, recorded figures use ``make bench`` (benchmarks/).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import deque
from typing import Any

import anyio

from rocketmq_actors.consumer.pull import OffsetReset, PullConsumer, PullOptions
from rocketmq_actors.errors import RocketMQError
from rocketmq_actors.names import validate_topic
from rocketmq_actors.producer import Message, Producer, ProducerOptions, create_topic
from rocketmq_actors.producer.future import SendFuture

from .common import STATE, add_namesrv


def _at(latencies: list[float], p: float) -> float:
    return round(latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1000, 3)


async def bench(args: argparse.Namespace) -> dict[str, Any]:
    body = b"x" * args.size
    latencies: list[float] = []
    failed = 0
    client = Producer(group="rocketmq_actors_bench", namesrv=args.namesrv,
                      options=ProducerOptions(max_pending=args.concurrency))  # fmt: skip
    STATE.client_started = True
    async with client as producer:
        await create_topic(producer.instance, args.topic, queues=args.queues)
        pending: deque[tuple[float, SendFuture]] = deque()
        began = time.perf_counter()

        async def settle() -> None:
            nonlocal failed
            started, future = pending.popleft()
            try:
                await future
                latencies.append(time.perf_counter() - started)
            except RocketMQError:
                failed += 1

        for _ in range(args.count):
            if len(pending) >= args.concurrency:
                await settle()
            message = Message(topic=args.topic, body=body)
            pending.append((time.perf_counter(), await producer.submit(message)))
        while pending:
            await settle()
        produce_s = time.perf_counter() - began
    received = 0
    began = time.perf_counter()
    async with PullConsumer(group=f"rocketmq_actors_bench_{time.time_ns()}", topics=[args.topic],
                            namesrv=args.namesrv,
                            options=PullOptions(auto_offset_reset=OffsetReset.EARLIEST,
                                                auto_commit=False)) as consumer:  # fmt: skip
        with anyio.move_on_after(max(30.0, args.count / 1000)):
            while received < args.count - failed:
                for records in (await consumer.getmany(timeout=1.0)).values():
                    received += len(records)
    consume_s = time.perf_counter() - began
    latencies.sort()
    sent = args.count - failed
    return {
        "topic": args.topic, "size": args.size, "concurrency": args.concurrency,
        "sent": sent, "failed": failed, "produce_msgs_per_s": round(sent / produce_s),
        "send_p50_ms": _at(latencies, 0.5) if latencies else None,
        "send_p99_ms": _at(latencies, 0.99) if latencies else None,
        "received": received, "consume_msgs_per_s": round(received / consume_s),
    }  # fmt: skip


def _run(args: argparse.Namespace) -> int:
    validate_topic(args.topic)
    if args.count < 1 or args.size < 1 or args.concurrency < 1 or args.queues < 1:
        raise ValueError("--count, --size, --concurrency and --queues must be >= 1")
    result = anyio.run(bench, args)
    if args.json:
        sys.stdout.write(json.dumps(result) + "\n")
    else:
        sys.stdout.write(
            f"produced {result['sent']} x {args.size} B: {result['produce_msgs_per_s']} msgs/s "
            f"(p50 {result['send_p50_ms']} ms, p99 {result['send_p99_ms']} ms); consumed "
            f"{result['received']}: {result['consume_msgs_per_s']} msgs/s\n"
        )
    return 0 if result["failed"] == 0 and result["received"] >= result["sent"] else 1


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("bench", help="produce then consume N messages; print throughput")
    add_namesrv(p)
    p.add_argument("--topic", default="rocketmq_actors_bench")
    p.add_argument("--count", type=int, default=50_000)
    p.add_argument("--size", type=int, default=1024, help="body bytes")
    p.add_argument("--concurrency", type=int, default=256, help="sends in flight")
    p.add_argument("--queues", type=int, default=8, help="queues of the topic (created)")
    p.add_argument("--json", action="store_true", help="one JSON line of figures")
    p.set_defaults(handler=_run)
