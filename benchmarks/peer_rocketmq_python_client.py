"""The official gRPC client's side of ``benchmarks/peers.py`` (``rocketmq-python-client`` from
PyPI, through a RocketMQ 5 Proxy).

Runs in a scratch virtualenv holding that client (never ours): ``benchmarks/peers.py`` creates
it and starts this module with its interpreter (this tree on ``PYTHONPATH`` for
``benchmarks.peer_protocol``, which needs nothing else of ours), over the line protocol of the
Java side of ``benchmarks/paired.py``; ENDPOINT is the Proxy's gRPC address:

    python -m benchmarks.peer_rocketmq_python_client windows ENDPOINT TOPIC WARMUP CONCURRENCY
        after a warm-up of pipelined sends it prints {"ready": true}; then per stdin line
        "sync SECONDS" / "pipelined SECONDS" -> {"mode", "messages", "failed", "errors",
        "seconds", "latencies_us"}; "quit" (or end of input) stops the producer.
    python -m benchmarks.peer_rocketmq_python_client drain ENDPOINT TOPIC GROUP COUNT
        its push consumer drains COUNT messages of TOPIC, then prints {"messages", "seconds",
        "first_message_s", "msgs_per_s_from_first", "cpu_s_from_first"}.

The client is thread-based (gRPC futures): "pipelined" keeps CONCURRENCY ``send_async`` calls
in flight with a semaphore, as the Java side does.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

from rocketmq import (
    ClientConfiguration,
    ConsumeResult,
    Credentials,
    FilterExpression,
    Message,
    MessageListener,
    Producer,
    PushConsumer,
)

from benchmarks.peer_protocol import BODY, reply, run, silence_logging


def _message(topic: str) -> Any:
    message = Message()
    message.topic = topic
    message.body = BODY
    return message


class _Window:
    """One window's counts, shared by the callbacks of the client's threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.sent = self.failed = 0
        self.errors: dict[str, int] = {}
        self.latencies: list[int] = []

    def done(self, started: int, error: BaseException | None) -> None:
        with self.lock:
            if error is None:
                self.sent += 1
                self.latencies.append((time.perf_counter_ns() - started) // 1000)
            else:
                self.failed += 1
                self.errors[type(error).__name__] = self.errors.get(type(error).__name__, 0) + 1

    def figures(self, began: float) -> dict[str, Any]:
        return {"messages": self.sent, "failed": self.failed, "errors": self.errors,
                "seconds": time.perf_counter() - began, "latencies_us": self.latencies}  # fmt: skip


def sync(producer: Any, topic: str, seconds: float) -> dict[str, Any]:
    window, began = _Window(), time.perf_counter()
    stop = time.monotonic() + seconds
    while time.monotonic() < stop:
        started = time.perf_counter_ns()
        try:
            producer.send(_message(topic))
        except Exception as exc:  # the client's errors have no common base
            window.done(started, exc)
        else:
            window.done(started, None)
    return window.figures(began)


def pipelined(producer: Any, topic: str, seconds: float, concurrency: int) -> dict[str, Any]:
    window, began = _Window(), time.perf_counter()
    slots = threading.Semaphore(concurrency)
    stop = time.monotonic() + seconds

    def settled(started: int, future: Any) -> None:
        window.done(started, future.exception())
        slots.release()

    while time.monotonic() < stop:
        slots.acquire()
        started = time.perf_counter_ns()
        try:
            future = producer.send_async(_message(topic))
        except Exception as exc:
            window.done(started, exc)
            slots.release()
            continue
        future.add_done_callback(lambda f, started=started: settled(started, f))
    for _ in range(concurrency):  # every send of the window settled
        slots.acquire()
    return window.figures(began)


def windows(endpoint: str, topic: str, warmup: float, concurrency: int) -> None:
    config = ClientConfiguration(endpoint, Credentials())
    producer = Producer(config, (topic,))
    producer.startup()
    try:
        pipelined(producer, topic, warmup, concurrency)
        reply({"ready": True})
        while line := sys.stdin.readline():
            words = line.split()
            if not words or words[0] == "quit":
                break
            if words[0] == "sync":
                reply({"mode": "sync", **sync(producer, topic, float(words[1]))})
            elif words[0] == "pipelined":
                figures = pipelined(producer, topic, float(words[1]), concurrency)
                reply({"mode": "pipelined", **figures})
            else:
                reply({"error": f"unknown mode {words[0]}"})
    finally:
        producer.shutdown()


def drain(endpoint: str, topic: str, group: str, count: int) -> None:
    done = threading.Event()
    lock = threading.Lock()
    seen = 0
    first_at = first_cpu = 0.0

    class Listener(MessageListener):  # type: ignore[misc]
        def consume(self, message: Any) -> Any:
            nonlocal seen, first_at, first_cpu
            with lock:
                if not seen:
                    first_at, first_cpu = time.perf_counter(), time.process_time()
                seen += 1
                if seen >= count:
                    done.set()
            return ConsumeResult.SUCCESS

    config = ClientConfiguration(endpoint, Credentials())
    consumer = PushConsumer(config, group, Listener(), {topic: FilterExpression("*")})
    began = time.perf_counter()
    consumer.startup()
    try:
        finished = done.wait(600)
        end, end_cpu = time.perf_counter(), time.process_time()
    finally:
        consumer.shutdown()
    if not finished:
        reply({"error": f"{seen} of {count} messages within 600 s"})
        return
    elapsed, first_s = end - began, first_at - began
    reply({"messages": seen, "seconds": round(elapsed, 2),
            "msgs_per_s": round(seen / elapsed), "first_message_s": round(first_s, 2),
            "msgs_per_s_from_first": round(seen / (elapsed - first_s)),
            "cpu_s_from_first": round(end_cpu - first_cpu, 3)})  # fmt: skip


def main(argv: list[str]) -> int:
    silence_logging()
    return run(argv, windows, drain)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
