"""``rocketmq-actors topic list|create|update|delete|route|status`` and ``route``.

topic list                               every topic the NameServer knows
topic create --topic T [--queues N | --read-queues R --write-queues W] [--perm P] [--order]
                                         UPDATE_AND_CREATE_TOPIC on every master
topic update --topic T [the same options] [--force]
                                         only the given settings, on every master having T
topic delete --topic T                   from every master, then every NameServer
topic route --topic T  (also: route)     brokers and queues of a topic
topic status --topic T                   min/max offset of every queue (mqadmin topicStatus)
"""

from __future__ import annotations

import argparse
from typing import Any

from rocketmq_actors import admin
from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.names import validate_topic

from .common import UsageError, add_common, emit, run_with_instance, table
from .progress import ProgressReport, add_progress_flag

ACTIONS = ("list", "create", "update", "delete", "route", "status")
DEFAULT_QUEUES = 4
PERMS = {"rw": 6, "r": 4, "w": 2, "none": 0, "6": 6, "4": 4, "2": 2, "0": 0}


async def _route(instance: ClientInstance, args: argparse.Namespace) -> dict[str, Any]:
    route = await instance.routes.get(args.topic)
    return {
        "topic": args.topic,
        "brokers": dict(route.masters()),
        "read_queues": [[q.broker_name, q.queue_id] for q in route.subscribe_queues],
        "write_queues": [[q.broker_name, q.queue_id] for q in route.publish_queues],
    }


def _render_route(result: dict[str, Any]) -> str:
    lines = [f"{name}: {addr}" for name, addr in result["brokers"].items()]
    lines.append(f"read queues: {len(result['read_queues'])}, "
                 f"write queues: {len(result['write_queues'])}")  # fmt: skip
    return "\n".join(lines)


async def _status(instance: ClientInstance, args: argparse.Namespace) -> dict[str, Any]:
    stats = await admin.topic_status(instance, args.topic)
    rows = [
        {"broker": q.broker_name, "queue": q.queue_id, "min": o.min_offset,
         "max": o.max_offset, "last_update_ms": o.last_update_timestamp}
        for q, o in stats.items()
    ]  # fmt: skip
    kept = sum(o.max_offset - o.min_offset for o in stats.values())
    return {"topic": args.topic, "queues": rows, "messages": kept}


def _render_status(result: dict[str, Any]) -> str:
    body = table(result["queues"], ["broker", "queue", "min", "max", "last_update_ms"])
    return f"{body}\nmessages kept: {result['messages']}"


async def _create(instance: ClientInstance, args: argparse.Namespace) -> dict[str, Any]:
    brokers = len(await admin.masters(instance, args.cluster))
    with ProgressReport(args.action, total=brokers, enabled=args.progress and not args.json) as bar:
        done = await admin.create_topic(
            instance, args.topic, read_queues=args.read_queues, write_queues=args.write_queues,
            perm=args.perm, order=args.order, cluster=args.cluster, progress=bar.advance,
        )  # fmt: skip
    same = args.read_queues == args.write_queues
    return {"topic": args.topic, "queues": args.write_queues if same else None,
            "read_queues": args.read_queues,
            "write_queues": args.write_queues, "perm": args.perm, "order": args.order,
            "brokers": done}  # fmt: skip


async def _update(instance: ClientInstance, args: argparse.Namespace) -> dict[str, Any]:
    brokers = len(await admin.masters(instance, args.cluster))
    with ProgressReport(args.action, total=brokers, enabled=args.progress and not args.json) as bar:
        done = await admin.update_topic(
            instance, args.topic, read_queues=args.read_queues, write_queues=args.write_queues,
            perm=args.perm, order=args.order, force=args.force, cluster=args.cluster,
            progress=bar.advance,
        )  # fmt: skip

    def agreed(field: str) -> Any:  # the value every broker now has, or None
        values = {getattr(new, field) for _, new in done.values()}
        return values.pop() if len(values) == 1 else None

    read, write = agreed("read_queues"), agreed("write_queues")
    return {"topic": args.topic, "queues": read if read == write else None,
            "read_queues": read, "write_queues": write, "perm": agreed("perm"),
            "order": agreed("order"), "brokers": list(done),
            "before": {name: {"read_queues": old.read_queues, "write_queues": old.write_queues,
                              "perm": old.perm, "order": old.order}
                       for name, (old, _) in done.items()}}  # fmt: skip


async def _delete(instance: ClientInstance, args: argparse.Namespace) -> dict[str, Any]:
    await instance.namesrv.topic_route(args.topic)  # TopicNotFound (exit 1) for a typo
    done = await admin.delete_topic(instance, args.topic, cluster=args.cluster)
    return {"topic": args.topic, "deleted": True, **done}


async def _list(instance: ClientInstance, args: argparse.Namespace) -> dict[str, Any]:
    return {"topics": await instance.namesrv.topic_list()}


WORK = {"list": _list, "create": _create, "update": _update, "delete": _delete,
        "route": _route, "status": _status}  # fmt: skip
RENDER = {
    "list": lambda r: "\n".join(r["topics"]),
    "create": lambda r: (
        f"{r['topic']}: {r['read_queues']} read / {r['write_queues']} write "
        f"queues, perm {r['perm']}, on {', '.join(r['brokers'])}"
    ),
    "delete": lambda r: (
        f"deleted {r['topic']} from {', '.join(r['brokers'])} and "
        f"{len(r['namesrvs'])} NameServer(s)"
    ),
    "route": _render_route,
    "status": _render_status,
}
RENDER["update"] = RENDER["create"]


def _check(args: argparse.Namespace) -> None:
    if args.action != "list":
        if not args.topic:
            raise UsageError(f"topic {args.action} needs --topic")
        validate_topic(args.topic)
    if args.action in ("create", "update"):
        given = [n for n in (args.queues, args.read_queues, args.write_queues) if n is not None]
        if any(n < 1 for n in given):
            raise UsageError("--queues, --read-queues and --write-queues must be >= 1")
        if args.perm is not None and args.perm not in PERMS:
            raise UsageError(f"--perm {args.perm!r}: one of rw, r, w, none (or 6, 4, 2, 0)")
        args.perm = None if args.perm is None else PERMS[args.perm]
        # update: what is not given stays as each broker has it (None); create: defaults
        default = None if args.action == "update" else DEFAULT_QUEUES
        queues = args.queues if args.queues is not None else default
        args.read_queues = args.read_queues if args.read_queues is not None else queues
        args.write_queues = args.write_queues if args.write_queues is not None else queues
        if args.action == "create":
            args.perm = admin.PERM_READ_WRITE if args.perm is None else args.perm
            args.order = bool(args.order)
    if getattr(args, "force", False) and args.action != "update":
        raise UsageError("--force is for topic update only")


def _run(args: argparse.Namespace) -> int:
    _check(args)
    emit(args, run_with_instance(WORK[args.action], args), RENDER[args.action])
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("topic", help="list, create, update, delete, route or status of topics")
    p.add_argument("action", choices=ACTIONS)
    add_common(p)
    p.add_argument("--topic", help="the topic (every action but list)")
    p.add_argument(
        "--queues", type=int, help="read and write queues (create: default 4; update: kept)"
    )
    p.add_argument("--read-queues", type=int, help="read queues (default --queues)")
    p.add_argument("--write-queues", type=int, help="write queues (default --queues)")
    p.add_argument("--perm", help="rw, r, w or none (create: default rw; update: kept)")
    p.add_argument(
        "--order", action=argparse.BooleanOptionalAction, default=None,
        help="an ordered topic, or not (--no-order) (create: default not; update: kept)",
    )  # fmt: skip
    p.add_argument(
        "--force", action="store_true",
        help="update: allow fewer read queues, or more write than read queues",
    )  # fmt: skip
    p.add_argument("--cluster", help="only the masters of this cluster (default: every one)")
    add_progress_flag(p)
    p.set_defaults(handler=_run)

    r = sub.add_parser("route", help="brokers and queues of a topic (= topic route)")
    add_common(r)
    r.add_argument("--topic", required=True)
    r.set_defaults(handler=_run, action="route")
