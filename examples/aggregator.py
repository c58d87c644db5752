"""A consumer daemon: totals per region of the orders the Spark job publishes.

    python examples/aggregator.py --namesrv 127.0.0.1:9876 --topic pipeline_orders \\
        --group pipeline_totals --expect 40000 --out totals.json

Consumes with a PushConsumer (clustering, from the first offset), counts every order once even
when it is delivered twice (the sink is at-least-once: de-duplicated by the message key), and
writes the totals as JSON once ``--expect`` distinct orders were seen, or when SIGTERM/SIGINT
arrives (then offsets are committed on the way out, and a restart resumes).
"""

from __future__ import annotations

import argparse
import json
import signal
from collections import defaultdict
from pathlib import Path
from typing import Any

import anyio
import structlog

from rocketmq_actors import ConsumeFrom, MessageExt, PushConsumer, PushOptions
from rocketmq_actors.logs import configure_logging

log = structlog.get_logger("examples.aggregator")


class Totals:
    def __init__(self, expect: int | None) -> None:
        self.expect = expect
        self.seen: set[str] = set()
        self.duplicates = 0
        self.by_region: dict[str, dict[str, Any]] = defaultdict(
            lambda: {"orders": 0, "revenue_cents": 0}
        )
        self.done = anyio.Event()

    async def handle(self, message: MessageExt) -> None:
        key = message.keys[0]
        if key in self.seen:
            self.duplicates += 1
            return
        order = json.loads(message.body)
        region = self.by_region[order["region"]]
        region["orders"] += 1
        region["revenue_cents"] += order["total_cents"]
        self.seen.add(key)
        if self.expect is not None and len(self.seen) >= self.expect:
            self.done.set()

    def report(self) -> dict[str, Any]:
        return {"orders": len(self.seen), "duplicates": self.duplicates,
                "by_region": dict(sorted(self.by_region.items()))}  # fmt: skip


async def run(args: argparse.Namespace) -> dict[str, Any]:
    totals = Totals(args.expect)

    async def on_signal() -> None:
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async for signum in signals:
                log.info("aggregator.signal", signal=signal.Signals(signum).name)
                totals.done.set()
                return

    async with (
        PushConsumer(
            group=args.group,
            subscriptions={args.topic: "*"},
            handler=totals.handle,
            namesrv=args.namesrv,
            options=PushOptions(consume_from=ConsumeFrom.FIRST_OFFSET),
        ),
        anyio.create_task_group() as tg,
    ):  # fmt: skip
        tg.start_soon(on_signal)
        await totals.done.wait()
        tg.cancel_scope.cancel()
    return totals.report()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--namesrv", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--expect", type=int, help="stop after this many distinct orders")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    configure_logging(json=True)
    report = anyio.run(run, args)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    log.info("aggregator.done", orders=report["orders"], duplicates=report["duplicates"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
