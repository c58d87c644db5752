"""The pure-Python peer tt67wq/pyrocketmq's side of ``benchmarks/peers.py``.

Runs in a scratch virtualenv holding that client (never ours): ``benchmarks/peers.py`` creates
it and starts this module with its interpreter (this tree on ``PYTHONPATH`` for
``benchmarks.peer_protocol``, which needs nothing else of ours), as ``benchmarks/paired.py`` starts
``benchmarks/java/ProduceWindows.java``, and speaks the same line protocol:

    python -m benchmarks.peer_pyrocketmq windows NAMESRV TOPIC WARMUP_SECONDS CONCURRENCY
        after a warm-up of pipelined sends it prints {"ready": true}; then per stdin line
        "sync SECONDS" / "pipelined SECONDS" -> {"mode", "messages", "failed", "seconds",
        "latencies_us"}; "quit" (or end of input) stops the producer.
    python -m benchmarks.peer_pyrocketmq drain NAMESRV TOPIC GROUP COUNT
        its push consumer drains COUNT messages of TOPIC from the first offset, then prints
        {"messages", "seconds", "first_message_s", "msgs_per_s_from_first", "cpu_s_from_first"}.

Where the client fails on its own, this program works around it and says so at the place.
The client's own settings where they differ from the Java client's defaults are set as Java's
(a pull right after the last, no message trace), so that the comparison is of the code.
"""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any

import pyrocketmq.model.utils
from pyrocketmq.consumer import (
    create_async_concurrent_consumer,
    create_async_message_listener,
)
from pyrocketmq.model import SUBSCRIBE_ALL, ConsumeResult
from pyrocketmq.model.consumer import ConsumeFromWhere
from pyrocketmq.model.message import Message
from pyrocketmq.producer import create_async_producer

from benchmarks.peer_protocol import BODY, reply, run, silence_logging


async def _window(producer: Any, topic: str, senders: int, seconds: float) -> dict[str, Any]:
    # the client's message id counter, a module global raised by every Message made, is
    # packed as a signed 16-bit number but wraps at 65,535: from the 32,768th message on,
    # every Message() raises struct.error. One window makes fewer than that; starting each
    # at 0 keeps the client alive for the whole run (the consumer's drains, fewer messages
    # each, run in fresh processes)
    pyrocketmq.model.utils._counter = 0
    latencies: list[int] = []
    sent = failed = 0
    errors: dict[str, int] = {}
    stop = time.monotonic() + seconds

    async def sender() -> None:
        nonlocal sent, failed
        while time.monotonic() < stop:
            started = time.perf_counter_ns()
            try:  # a message per send, each with its own id, as ours and Java's make them
                result = await producer.send(Message(topic=topic, body=BODY))
            except Exception as exc:  # the client's errors have no common base
                failed += 1
                errors[type(exc).__name__] = errors.get(type(exc).__name__, 0) + 1
                continue
            latencies.append((time.perf_counter_ns() - started) // 1000)
            if result.is_success:
                sent += 1
            else:
                failed += 1

    began = time.perf_counter()
    await asyncio.gather(*(sender() for _ in range(senders)))
    return {"messages": sent, "failed": failed, "errors": errors,
            "seconds": time.perf_counter() - began, "latencies_us": latencies}  # fmt: skip


async def windows(namesrv: str, topic: str, warmup: float, concurrency: int) -> None:
    producer = create_async_producer("bench_peer_pyrocketmq", namesrv, enable_trace=False)
    await producer.start()
    try:
        await _window(producer, topic, concurrency, warmup)
        reply({"ready": True})
        loop = asyncio.get_running_loop()
        while line := await loop.run_in_executor(None, sys.stdin.readline):
            words = line.split()
            if not words or words[0] == "quit":
                break
            senders = {"sync": 1, "pipelined": concurrency}.get(words[0])
            if senders is None:
                reply({"error": f"unknown mode {words[0]}"})
                continue
            reply({"mode": words[0], **await _window(producer, topic, senders, float(words[1]))})
    finally:
        await producer.shutdown()


async def drain(namesrv: str, topic: str, group: str, count: int) -> None:
    done = asyncio.Event()
    seen = 0
    first_at = first_cpu = 0.0

    async def handle(messages: list[Any]) -> ConsumeResult:
        nonlocal seen, first_at, first_cpu
        if not seen:
            first_at, first_cpu = time.perf_counter(), time.process_time()
        seen += len(messages)
        if seen >= count:
            done.set()
        return ConsumeResult.SUCCESS

    consumer = create_async_concurrent_consumer(
        group, namesrv, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        pull_interval=0, enable_trace=False, enable_message_trace=False,
    )  # fmt: skip
    await consumer.subscribe(topic, SUBSCRIBE_ALL, create_async_message_listener(handle))
    began = time.perf_counter()
    await consumer.start()
    try:
        await asyncio.wait_for(done.wait(), 600)
        end, end_cpu = time.perf_counter(), time.process_time()
    finally:
        await consumer.shutdown()
    elapsed, first_s = end - began, first_at - began
    reply({"messages": seen, "seconds": round(elapsed, 2), "msgs_per_s": round(seen / elapsed),
            "first_message_s": round(first_s, 2),
            "msgs_per_s_from_first": round(seen / (elapsed - first_s)),
            "cpu_s_from_first": round(end_cpu - first_cpu, 3)})  # fmt: skip


def main(argv: list[str]) -> int:
    silence_logging()
    return run(
        argv,
        lambda *args: asyncio.run(windows(*args)),
        lambda *args: asyncio.run(drain(*args)),
    )


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
