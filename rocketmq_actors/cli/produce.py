"""``rocketmq-actors produce``: send messages from a shell."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from collections import deque
from typing import Any

import anyio

from rocketmq_actors.errors import RocketMQError
from rocketmq_actors.producer import Message, Producer
from rocketmq_actors.producer.future import SendFuture

from .progress import ProgressReport, add_progress_flag


async def produce(args: argparse.Namespace) -> dict[str, Any]:
    body = (b"rocketmq-actors " * (args.size // 16 + 1))[: args.size]
    sent = failed = 0
    last_error = ""
    pending: deque[SendFuture] = deque()

    def settle(future: SendFuture) -> None:
        nonlocal sent, failed, last_error
        try:
            future.result()
            sent += 1
        except RocketMQError as exc:
            failed += 1
            last_error = str(exc)
        bar.advance()

    bar = ProgressReport("sent", total=args.count, enabled=args.progress and not args.json)
    async with Producer(
        namesrv=args.namesrv, group=args.group, send_timeout=args.timeout
    ) as producer:
        started = time.monotonic()
        with bar:
            for i in range(args.count):
                if args.rate:
                    delay = started + i / args.rate - time.monotonic()
                    if delay > 0:
                        await anyio.sleep(delay)  # pacing, not synchronization
                message = Message(
                    topic=args.topic,
                    body=body,
                    tags=args.tags,
                    keys=[f"{args.key_prefix}{i}"] if args.keys else (),
                )
                pending.append(await producer.send_nowait(message))
                while pending and pending[0].done():
                    settle(pending.popleft())
            while pending:
                future = pending.popleft()
                with contextlib.suppress(RocketMQError):  # settle() records the failure
                    await future
                settle(future)
        elapsed = time.monotonic() - started
    result: dict[str, Any] = {
        "topic": args.topic,
        "sent": sent,
        "failed": failed,
        "seconds": round(elapsed, 3),
        "msgs_per_s": round(sent / elapsed, 1) if elapsed > 0 else 0.0,
    }
    if last_error:
        result["last_error"] = last_error
    return result


def _run(args: argparse.Namespace) -> int:
    if args.count < 1 or args.size < 1:
        raise ValueError("--count and --size must be at least 1")
    result = anyio.run(produce, args)
    if args.json:
        sys.stdout.write(json.dumps(result) + "\n")
    else:
        sys.stdout.write(
            f"sent {result['sent']} failed {result['failed']} in {result['seconds']} s "
            f"({result['msgs_per_s']} msgs/s)\n"
        )
    return 0 if result["failed"] == 0 else 1


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("produce", help="send messages to a topic")
    p.add_argument("--namesrv", required=True, help="NameServer address(es), host:port[;host:port]")
    p.add_argument("--topic", required=True)
    p.add_argument("--count", type=int, default=1, help="messages to send (default 1)")
    p.add_argument("--size", type=int, default=128, help="body bytes (default 128)")
    p.add_argument(
        "--rate", type=float, default=0.0, help="messages per second (0: as fast as possible)"
    )
    p.add_argument("--keys", action="store_true", help="give each message a key")
    p.add_argument("--key-prefix", default="key-", help="prefix of the generated keys")
    p.add_argument("--tags", default=None, help="tag of every message")
    p.add_argument("--group", default="rocketmq_actors_cli", help="producer group")
    p.add_argument("--timeout", type=float, default=3.0, help="send timeout, seconds")
    add_progress_flag(p)
    p.add_argument("--json", action="store_true", help="end with one JSON line of figures")
    p.set_defaults(handler=_run)
