"""``rocketmq-actors route|topic|group``: look at (and create) what a cluster holds.

    rocketmq-actors route --namesrv ADDR --topic T           brokers and queues of a topic
    rocketmq-actors topic list --namesrv ADDR                every topic
    rocketmq-actors topic create --namesrv ADDR --topic T [--queues N]
    rocketmq-actors group --namesrv ADDR --group G --topic T  offsets and lag per queue
    rocketmq-actors tree --namesrv ADDR --group G --topic T   each member's live actor tree

Each prints a table, or one JSON document with ``--json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import anyio

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.consumer.admin import consumer_running_info
from rocketmq_actors.consumer.assignment import consumer_ids
from rocketmq_actors.consumer.offsets import RemoteOffsetStore
from rocketmq_actors.consumer.pull import max_offset, min_offset
from rocketmq_actors.consumer.requests import TREE_PROPERTY
from rocketmq_actors.names import validate_group, validate_topic
from rocketmq_actors.producer import create_topic
from rocketmq_actors.runtime.tree import Node


async def _route(args: argparse.Namespace) -> dict[str, Any]:
    async with ClientInstance(args.namesrv) as instance:
        route = await instance.routes.get(args.topic)
        return {
            "topic": args.topic,
            "brokers": dict(route.masters()),
            "read_queues": [[q.broker_name, q.queue_id] for q in route.subscribe_queues],
            "write_queues": [[q.broker_name, q.queue_id] for q in route.publish_queues],
        }


async def _topics(args: argparse.Namespace) -> dict[str, Any]:
    async with ClientInstance(args.namesrv) as instance:
        if args.action == "create":
            brokers = await create_topic(instance, args.topic, queues=args.queues)
            return {"topic": args.topic, "queues": args.queues, "brokers": brokers}
        return {"topics": await instance.namesrv.topic_list()}


async def _group(args: argparse.Namespace) -> dict[str, Any]:
    async with ClientInstance(args.namesrv) as instance:
        route = await instance.routes.get(args.topic)
        offsets = RemoteOffsetStore(instance, args.group)
        rows = []
        for queue in route.subscribe_queues:
            committed = await offsets.fetch(queue)
            low, high = await min_offset(instance, queue), await max_offset(instance, queue)
            rows.append({
                "broker": queue.broker_name, "queue": queue.queue_id, "min": low, "max": high,
                # as mqadmin: nothing committed yet counts from the oldest message kept
                "committed": committed, "lag": high - (low if committed is None else committed),
            })  # fmt: skip
        return {"group": args.group, "topic": args.topic, "queues": rows,
                "total_lag": sum(r["lag"] for r in rows)}  # fmt: skip


async def _tree(args: argparse.Namespace) -> dict[str, Any]:
    """Each online member's live actor tree, asked through the broker (GET_CONSUMER_RUNNING
    INFO): rocketmq-actors members put it in their running info; other clients have none."""
    async with ClientInstance(args.namesrv) as instance:
        ids = (
            [args.client_id]
            if args.client_id
            else await consumer_ids(instance, args.group, args.topic)
        )
        clients: dict[str, Any] = {}
        for client_id in ids:
            info = await consumer_running_info(instance, args.topic, args.group, client_id)
            raw = info.properties.get(TREE_PROPERTY)
            clients[client_id] = (
                json.loads(raw) if raw else {"client": info.properties.get("clientVersion", "?")}
            )
        return {"group": args.group, "clients": clients}


def _table(result: dict[str, Any]) -> str:
    if "clients" in result:
        blocks = []
        for client_id, tree in result["clients"].items():
            if "kind" in tree:
                blocks.append(f"{client_id}\n{Node.from_dict(tree).render()}")
            else:
                blocks.append(f"{client_id}: no actor tree (a {tree['client']} client)")
        return "\n\n".join(blocks) or f"no client of group {result['group']} is online"
    if "queues" in result and isinstance(result["queues"], list):
        lines = [f"{'broker':12} {'queue':>5} {'min':>10} {'max':>10} {'committed':>10} {'lag':>8}"]
        for r in result["queues"]:
            committed = "-" if r["committed"] is None else r["committed"]
            lines.append(f"{r['broker']:12} {r['queue']:>5} {r['min']:>10} {r['max']:>10} "
                         f"{committed:>10} {r['lag']:>8}")  # fmt: skip
        lines.append(f"total lag: {result['total_lag']}")
        return "\n".join(lines)
    if "topics" in result:
        return "\n".join(result["topics"])
    if "read_queues" in result:
        lines = [f"{name}: {addr}" for name, addr in result["brokers"].items()]
        lines.append(f"read queues: {len(result['read_queues'])}, "
                     f"write queues: {len(result['write_queues'])}")  # fmt: skip
        return "\n".join(lines)
    return (
        f"created {result['topic']} ({result['queues']} queues) on {', '.join(result['brokers'])}"
    )


def _runner(work: Any) -> Any:
    def run(args: argparse.Namespace) -> int:
        if getattr(args, "topic", None):
            validate_topic(args.topic)
        if getattr(args, "group", None):
            validate_group(args.group)
        result = anyio.run(work, args)
        sys.stdout.write((json.dumps(result) if args.json else _table(result)) + "\n")
        return 0

    return run


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--namesrv", required=True, help="NameServer address(es)")
        p.add_argument("--json", action="store_true", help="one JSON document")

    p = sub.add_parser("route", help="brokers and queues of a topic")
    common(p)
    p.add_argument("--topic", required=True)
    p.set_defaults(handler=_runner(_route))

    p = sub.add_parser("topic", help="list topics, or create one on every master")
    p.add_argument("action", choices=["list", "create"])
    common(p)
    p.add_argument("--topic", help="the topic to create")
    p.add_argument("--queues", type=int, default=4, help="read and write queues (default 4)")

    def topics(args: argparse.Namespace) -> int:
        if args.action == "create" and not args.topic:
            raise ValueError("topic create needs --topic")
        if args.queues < 1:
            raise ValueError("--queues must be >= 1")
        return int(_runner(_topics)(args))

    p.set_defaults(handler=topics)

    p = sub.add_parser("tree", help="the live actor tree of each online member of a group")
    common(p)
    p.add_argument("--group", required=True)
    p.add_argument("--topic", required=True, help="a topic the group consumes")
    p.add_argument("--client-id", help="only this member (default: every online member)")
    p.set_defaults(handler=_runner(_tree))

    p = sub.add_parser("group", help="a consumer group's offsets and lag per queue of a topic")
    common(p)
    p.add_argument("--group", required=True)
    p.add_argument("--topic", required=True)
    p.set_defaults(handler=_runner(_group))
