"""Soak: steady produce + consume for ``--minutes``; RSS, tasks and file descriptors must not
grow. ``make soak`` (not CI: it takes 10 minutes).

    python -m benchmarks.soak [--minutes 10] [--rate 1000] [--namesrv HOST:PORT]

One process runs a producer (``--workers`` tasks, each sending 1 KiB keyed messages in turn,
paced to ``--rate`` messages a second in total) and a push consumer on the same topic. Every
``--sample`` seconds it records VmRSS, the number of running tasks and open file descriptors.
The first ``--warmup`` seconds (allocator and import warm-up) are the baseline window. Passes
when, after it: RSS stays within 10 % of the baseline, the task and descriptor counts never
exceed the baseline's, and every acknowledged send was received. Writes
``benchmarks/results/soak.json``; exits 1 if a criterion fails.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any

import anyio

from rocketmq_actors.consumer.push import ConsumeFrom, PushConsumer, PushOptions
from rocketmq_actors.errors import RocketMQError
from rocketmq_actors.producer import Message, Producer, create_topic
from rocketmq_actors.protocol.records import MessageExt
from rocketmq_actors.testing.faults import Outcome

from .common import RESULTS, on_cluster, run_main, write_results
from .consumer import rss_mb


def fds() -> int:
    return len(os.listdir("/proc/self/fd"))


class Ledger:
    """Send outcomes and receipt counts in two preallocated byte arrays indexed by key: the
    bookkeeping takes no memory as the soak runs (a dict per key would grow RSS by itself)."""

    def __init__(self, capacity: int) -> None:
        self.outcome = bytearray(capacity)  # 0 not sent, 1 acknowledged, 2 failed, 3 unknown
        self.receipts = bytearray(capacity)  # deliveries, saturating at 255
        self.sent = self.acknowledged = self.received = 0

    def record_send(self, key: int, outcome: Outcome) -> None:
        self.outcome[key] = {Outcome.OK: 1, Outcome.FAILED: 2, Outcome.UNKNOWN: 3}[outcome]
        self.sent += 1
        self.acknowledged += outcome is Outcome.OK

    def record_receive(self, key: int) -> None:
        self.receipts[key] = min(255, self.receipts[key] + 1)
        self.received += 1

    def summary(self) -> dict[str, Any]:
        counts = {o.value: self.outcome.count(n) for n, o in
                  ((1, Outcome.OK), (2, Outcome.FAILED), (3, Outcome.UNKNOWN))}  # fmt: skip
        lost = sum(1 for k, o in enumerate(self.outcome) if o == 1 and not self.receipts[k])
        unique = len(self.receipts) - self.receipts.count(0)
        return {"sent": counts, "lost": lost, "duplicates": self.received - unique}


async def soak(namesrv: str, args: argparse.Namespace) -> dict[str, Any]:
    topic = f"Soak_{os.getpid()}_{int(time.time())}"
    ledger = Ledger(int(args.rate * args.minutes * 60 * 1.5) + 10_000)
    samples: list[dict[str, float]] = []
    body = b"s" * 1024
    stop = anyio.Event()
    progress = anyio.Event()

    async def handle(message: MessageExt) -> None:
        nonlocal progress
        ledger.record_receive(int(message.keys[0]))
        progress.set()
        progress = anyio.Event()

    async def worker(first: int, producer: Producer) -> None:
        interval = args.workers / args.rate
        key = first
        next_at = time.monotonic()
        while not stop.is_set():
            try:
                await producer.send(Message(topic=topic, body=body, keys=[str(key)]))
                ledger.record_send(key, Outcome.OK)
            except RocketMQError as exc:
                ledger.record_send(key, Outcome.UNKNOWN if exc.outcome_unknown else Outcome.FAILED)
            key += args.workers
            next_at += interval
            await anyio.sleep(max(0.0, next_at - time.monotonic()))

    began = time.monotonic()
    async with Producer(namesrv=namesrv) as producer:
        await create_topic(producer.instance, topic, queues=4)
        async with PushConsumer(
            group=f"{topic}_group",
            subscriptions={topic: "*"},
            handler=handle,
            namesrv=namesrv,
            options=PushOptions(consume_from=ConsumeFrom.FIRST_OFFSET),
        ):  # fmt: skip
            async with anyio.create_task_group() as tg:
                for n in range(args.workers):
                    tg.start_soon(worker, n, producer)
                while time.monotonic() - began < args.minutes * 60:
                    await anyio.sleep(args.sample)
                    elapsed = time.monotonic() - began
                    samples.append({
                        "t_s": round(elapsed, 1), "rss_mb": rss_mb(),
                        "tasks": len(anyio.get_running_tasks()), "fds": fds(),
                        "sent": ledger.sent, "received": ledger.received,
                    })  # fmt: skip
                    print(samples[-1], flush=True)  # noqa: T201 - progress on the terminal
                stop.set()
            with anyio.move_on_after(60):
                while ledger.received < ledger.acknowledged:  # the summary decides
                    await progress.wait()
    return verdict(samples, args.warmup, **ledger.summary())


def verdict(
    samples: list[dict[str, float]],
    warmup: float,
    *,
    sent: dict[str, int],
    lost: int,
    duplicates: int,
) -> dict[str, Any]:
    base = [s for s in samples if s["t_s"] <= warmup] or samples[:1]
    after = [s for s in samples if s["t_s"] > warmup] or samples[-1:]
    rss_base = max(s["rss_mb"] for s in base)
    rss_max = max(s["rss_mb"] for s in after)
    rss_min = min(s["rss_mb"] for s in after)
    checks = {
        "rss_within_10_percent": rss_base * 0.9 <= rss_min and rss_max <= rss_base * 1.1,
        "no_task_growth": max(s["tasks"] for s in after) <= max(s["tasks"] for s in base),
        "no_fd_growth": max(s["fds"] for s in after) <= max(s["fds"] for s in base),
        "nothing_lost": lost == 0,
    }
    return {
        "rss_baseline_mb": rss_base,
        "rss_min_after_mb": rss_min,
        "rss_max_after_mb": rss_max,
        "rss_change_percent": round((rss_max - rss_base) / rss_base * 100, 1),
        "tasks_baseline": max(s["tasks"] for s in base),
        "tasks_max_after": max(s["tasks"] for s in after),
        "fds_baseline": max(s["fds"] for s in base),
        "fds_max_after": max(s["fds"] for s in after),
        "sent": sent,
        "lost": lost,
        "duplicates": duplicates,
        "checks": checks,
        "passed": all(checks.values()),
        "samples": samples,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--rate", type=float, default=1000.0, help="messages per second")
    parser.add_argument("--workers", type=int, default=16)
    parser.add_argument("--sample", type=float, default=10.0, help="seconds between samples")
    parser.add_argument("--warmup", type=float, default=60.0, help="baseline window, seconds")
    parser.add_argument("--namesrv", help="use this cluster instead of starting one")
    parser.add_argument("--out", type=Path, default=RESULTS / "soak.json")
    args = parser.parse_args(argv)
    figures = on_cluster(args.namesrv, lambda namesrv: anyio.run(soak, namesrv, args))
    written = write_results(args.out, {"minutes": args.minutes, "rate_per_s": args.rate, **figures})
    return 0 if written["passed"] else 1


if __name__ == "__main__":
    raise SystemExit(run_main(main))
