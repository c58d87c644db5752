"""``rocketmq-actors peek`` (alias ``browse``): read stored messages without a consumer group.

Pulls (PULL_MESSAGE without the commit flag) as mqadmin's tools do, in the system group
``TOOLS_CONSUMER`` (Java's ``MixAll.TOOLS_CONSUMER_GROUP``, present on every broker): no
group joins, nothing is committed, no offset is created.

    peek --topic T [--queue BROKER:ID] [--offset N | --from-first | --from-last |
                    --from-timestamp MS] [--count N]

``--count`` bounds the messages printed in all, but with ``--from-last``, where it is the last
N of each queue (as ``kcat -o -N`` takes the last N of every partition).
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
from typing import Any

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.consumer.core.brokercalls import (
    PullStatus,
    max_offset,
    min_offset,
    offset_for_time,
    pull_once,
)
from rocketmq_actors.consumer.core.subscriptions import Subscription
from rocketmq_actors.names import validate_topic
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.records import MessageExt

from .common import NotFound, UsageError, add_namesrv, run_with_instance
from .formatting import add_format_flag, check_format, render

TOOLS_GROUP = "TOOLS_CONSUMER"


def record(message: MessageExt) -> dict[str, Any]:
    try:
        body: dict[str, str] = {"body": message.body.decode()}
    except UnicodeDecodeError:
        body = {"body_base64": base64.b64encode(message.body).decode()}
    return {
        "topic": message.topic, "broker": message.broker_name, "queue": message.queue_id,
        "offset": message.queue_offset, "msg_id": message.msg_id, "tags": message.tags,
        "keys": message.keys, "properties": message.properties,
        "born_timestamp_ms": message.born_timestamp,
        "store_timestamp_ms": message.store_timestamp, **body,
    }  # fmt: skip


def _parse_queue(text: str, topic: str) -> MessageQueue:
    broker, _, queue_id = text.rpartition(":")
    if not broker or not queue_id.isdigit():
        raise UsageError(f"--queue {text!r}: expected BROKER:ID, e.g. broker-a:0")
    return MessageQueue(topic, broker, int(queue_id))


async def _start(instance: ClientInstance, queue: MessageQueue, args: argparse.Namespace) -> int:
    low, high = await min_offset(instance, queue), await max_offset(instance, queue)
    start: int = args.offset if args.offset is not None else low
    if args.from_last:
        start = high - int(args.count)
    elif args.from_timestamp is not None:
        start = await offset_for_time(instance, queue, args.from_timestamp)
    return min(max(start, low), high)


async def peek(instance: ClientInstance, args: argparse.Namespace) -> list[dict[str, Any]]:
    route = await instance.routes.get(args.topic)
    queues = sorted(route.subscribe_queues)
    if args.queue:
        wanted = _parse_queue(args.queue, args.topic)
        if wanted not in queues:
            raise NotFound(f"{args.topic} has no queue {args.queue}")
        queues = [wanted]
    subscription = Subscription.parse(args.topic, args.tags)
    out: list[dict[str, Any]] = []
    for queue in queues:
        offset = await _start(instance, queue, args)
        # --from-last: the last --count of each queue; otherwise --count in all
        limit = len(out) + args.count if args.from_last else args.count
        while len(out) < limit:
            result = await pull_once(
                instance, TOOLS_GROUP, queue, offset, subscription=subscription,
                sub_version=0, max_messages=min(32, limit - len(out)), wait=0.0,
                request_timeout=instance.request_timeout,
            )  # fmt: skip
            for message in result.messages[: limit - len(out)]:
                out.append(record(message))
                _print(args, out[-1], message)
            if result.status is not PullStatus.FOUND and result.status is not (
                PullStatus.NO_MATCHED_MSG
            ):
                break
            if result.next_offset <= offset:
                break
            offset = result.next_offset
        if len(out) >= args.count and not args.from_last:
            break
    return out


def _print(args: argparse.Namespace, rec: dict[str, Any], message: MessageExt) -> None:
    if args.format is not None:
        sys.stdout.write(render(args.format, message))
        return
    if args.json:
        sys.stdout.write(json.dumps(rec) + "\n")
        return
    body = rec.get("body", f"<{len(rec.get('body_base64', ''))} base64 chars>")
    keys = ",".join(rec["keys"]) or "-"
    sys.stdout.write(f"{rec['broker']}:{rec['queue']}@{rec['offset']}\ttags={rec['tags'] or '-'}"
                     f"\tkeys={keys}\t{body}\n")  # fmt: skip


def _run(args: argparse.Namespace) -> int:
    validate_topic(args.topic)
    if args.count < 1:
        raise UsageError("--count must be >= 1")
    if args.offset is not None and args.offset < 0:
        raise UsageError("--offset must be >= 0")
    if args.from_timestamp is not None and args.from_timestamp < 0:
        raise UsageError("--from-timestamp must be >= 0 (milliseconds since the epoch)")
    if args.queue:
        _parse_queue(args.queue, args.topic)
    if args.format is not None:
        check_format(args.format)
    run_with_instance(peek, args)
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "peek", aliases=["browse"], help="read stored messages without a group, no commit"
    )
    add_namesrv(p)
    p.add_argument("--topic", required=True)
    p.add_argument("--queue", metavar="BROKER:ID", help="only this queue (default: every one)")
    start = p.add_mutually_exclusive_group()
    start.add_argument("--offset", type=int, help="start at this offset of each queue")
    start.add_argument("--from-first", action="store_true", help="the oldest kept (default)")
    start.add_argument("--from-last", action="store_true", help="the last --count of each queue")
    start.add_argument(
        "--from-timestamp",
        type=int,
        metavar="MS",
        help="each queue from its first message stored at or after MS (epoch ms)",
    )
    p.add_argument(
        "--count",
        type=int,
        default=10,
        help="at most N messages (default 10); with --from-last, N of each queue",
    )
    p.add_argument("--tags", default="*", help="tag expression, e.g. 'a || b' (default *)")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="one JSON object per message")
    add_format_flag(out, "docs/cli.md")
    p.set_defaults(handler=_run)
