"""Producer throughput and latency against a real broker on this machine.

    python -m benchmarks.producer [--seconds 10] [--concurrency 256] [--uvloop]

(a) sync sends, one in flight: latency; (b) 1 KiB sends with ``--concurrency`` in flight from
one process: messages/s and latency; (c) batches of 16 x 1 KiB the same way. Starts its own
local cluster. ``benchmarks.paired`` runs these windows against the Java client's, taking turns
(``make bench``).
"""

from __future__ import annotations

import argparse
import functools
import time
from array import array
from pathlib import Path
from typing import Any

import anyio

from rocketmq_actors.extras import uvloop_options
from rocketmq_actors.producer import Message, Producer, ProducerOptions, SendFuture, create_topic

from .common import RESULTS, on_cluster, percentiles, run_main, write_results

BODY = b"x" * 1024
QUEUES = 8


#: every send's latency (seconds), in an array: not a list, whose items a full run of the
#: garbage collector visits, in the measured process (as Java's windows keep a long[])
Latencies = array


async def window(producer: Producer, topic: str, concurrency: int, seconds: float,
                 batch: int) -> tuple[int, float, Latencies[float]]:  # fmt: skip
    """``concurrency`` senders for ``seconds`` (batches of ``batch`` when > 1): messages sent,
    elapsed seconds (until the last send settled) and every send's latency."""
    latencies = array("d")
    sent = 0
    stop = time.monotonic() + seconds
    messages = [Message(topic=topic, body=BODY) for _ in range(batch)]

    async def worker() -> None:
        nonlocal sent
        while time.monotonic() < stop:
            started = time.perf_counter()
            if batch > 1:
                await producer.send_batch(messages)
            else:
                await producer.send(messages[0])
            latencies.append(time.perf_counter() - started)
            sent += batch

    began = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(concurrency):
            tg.start_soon(worker)
    return sent, time.perf_counter() - began, latencies


async def nowait_window(
    producer: Producer, topic: str, seconds: float
) -> tuple[int, float, Latencies[float], int]:
    """``submit`` from one task for ``seconds``, as the Java client's asynchronous send
    with a callback from one thread: the producer's ``max_pending`` is the window (admission
    waits for room as Java's semaphore does) and each send's ``callback`` (Java's
    ``SendCallback``) takes its latency. Messages sent, elapsed seconds (until the last
    settled), every send's latency, failures."""
    latencies = array("d")
    failed = 0
    admitted = -1  # (the count, once the last send is admitted)
    all_settled = anyio.Event()
    message = Message(topic=topic, body=BODY)
    perf_counter = time.perf_counter

    def settled(started: float, future: SendFuture) -> None:
        nonlocal failed
        latencies.append(perf_counter() - started)
        if future.cancelled() or future.exception() is not None:
            failed += 1
        if len(latencies) == admitted:
            all_settled.set()

    sent = 0
    stop = time.monotonic() + seconds
    began = perf_counter()
    while time.monotonic() < stop:
        started = perf_counter()
        await producer.submit(message, callback=functools.partial(settled, started))
        sent += 1
    admitted = sent
    if len(latencies) < admitted:  # (each send's callback, as Java's program waits for)
        await all_settled.wait()
    return len(latencies) - failed, perf_counter() - began, latencies, failed


async def _run(producer: Producer, topic: str, concurrency: int, seconds: float,
               batch: int) -> dict[str, Any]:  # fmt: skip
    sent, elapsed, latencies = await window(producer, topic, concurrency, seconds, batch)
    return {"msgs_per_s": round(sent / elapsed), "messages": sent, **percentiles(latencies)}


async def bench(
    namesrv: str, seconds: float, concurrency: int, warmup: float, topic: str | None = None
) -> dict[str, Any]:
    async with Producer(
        namesrv=namesrv, group="bench_producer", options=ProducerOptions(max_pending=100_000)
    ) as producer:
        topic = topic or f"bench_{int(time.time())}"
        await create_topic(producer.instance, topic, queues=QUEUES)
        await _run(producer, topic, concurrency, warmup, 1)  # broker JIT and connections
        return {
            "sync_one_in_flight": await _run(producer, topic, 1, seconds, 1),
            "pipelined_1k": await _run(producer, topic, concurrency, seconds, 1),
            "batch_16x1k": await _run(producer, topic, max(1, concurrency // 16), seconds, 16),
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--warmup", type=float, default=15.0)
    parser.add_argument("--uvloop", action="store_true")
    parser.add_argument("--namesrv", help="use this cluster instead of starting one")
    parser.add_argument("--out", type=Path, default=RESULTS / "producer.json")
    args = parser.parse_args(argv)
    options = uvloop_options(args.uvloop)  # MissingExtra names the extra

    def measure(namesrv: str) -> dict[str, Any]:
        return anyio.run(bench, namesrv, args.seconds, args.concurrency, args.warmup,
                         backend_options=options)  # fmt: skip

    figures = on_cluster(args.namesrv, measure)
    write_results(
        args.out,
        {"event_loop": "uvloop" if args.uvloop else "asyncio", "concurrency": args.concurrency,
         "seconds": args.seconds, **figures},
    )  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(run_main(main))
