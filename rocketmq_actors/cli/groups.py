"""``rocketmq-actors group list|describe|update|delete|producers|reset-offset|lag`` and ``tree``.

group list                                   every subscription group of every master
group describe --group G [--topic T]         members, subscriptions, lag per queue
group update --group G [--retry-max-times N] [--orderly] [--no-broadcast] [--disable]
                                             create or set a group on every master
group delete --group G [--clean-offset]      delete a group's settings (and offsets)
group producers --group G                    the online clients of producer group G
group reset-offset --group G --topic T (--to-time T | --to-earliest | --to-latest)
group [lag] --group G --topic T              offsets and lag per queue of one topic
tree --group G --topic T                     each online member's live actor tree
"""

from __future__ import annotations

import argparse
import datetime
import json
from typing import Any

from rocketmq_actors import admin
from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.consumer.core.admin import consumer_running_info
from rocketmq_actors.consumer.core.assignment import consumer_ids
from rocketmq_actors.consumer.core.offsets import RemoteOffsetStore
from rocketmq_actors.consumer.core.running_info import TREE_PROPERTY
from rocketmq_actors.consumer.pull import max_offset, min_offset
from rocketmq_actors.names import validate_group, validate_topic
from rocketmq_actors.runtime.tree import Node

from .common import UsageError, add_common, emit, run_with_instance, table
from .progress import ProgressReport, add_progress_flag

ACTIONS = ("list", "describe", "update", "delete", "producers", "reset-offset", "lag",
           "clone-offset", "set-request-mode", "request-modes")  # fmt: skip


async def _list(instance: ClientInstance, args: argparse.Namespace) -> dict[str, Any]:
    return {"groups": await admin.group_list(instance)}


def _render_list(result: dict[str, Any]) -> str:
    rows = [{"group": g, **{k: v for k, v in c.items() if k != "brokers"},
             "brokers": ",".join(c["brokers"])} for g, c in result["groups"].items()]  # fmt: skip
    return table(rows, ["group", "consume_enable", "consume_orderly", "retry_max_times",
                        "brokers"])  # fmt: skip


async def _describe(instance: ClientInstance, args: argparse.Namespace) -> dict[str, Any]:
    conn = await admin.consumer_connection(instance, args.group)
    stats = await admin.consume_stats(instance, args.group, args.topic)
    if conn is None and not stats.offsets and args.group not in await admin.group_list(instance):
        raise admin.GroupNotFound(args.group)
    queues = [
        {"topic": q.topic, "broker": q.broker_name, "queue": q.queue_id,
         "broker_offset": o.broker_offset, "consumer_offset": o.consumer_offset,
         "lag": o.lag, "last_timestamp_ms": o.last_timestamp}
        for q, o in stats.offsets.items()
    ]  # fmt: skip
    return {
        "group": args.group,
        "online": conn is not None,
        "connections": [
            {
                "client_id": c.client_id,
                "addr": c.client_addr,
                "language": c.language,
                "version": c.version,
            }
            for c in (conn.connections if conn else ())
        ],
        "subscriptions": dict(conn.subscriptions) if conn else {},
        "consume_type": conn.consume_type if conn else None,
        "message_model": conn.message_model if conn else None,
        "consume_from_where": conn.consume_from_where if conn else None,
        "queues": queues,
        "total_lag": sum(r["lag"] for r in queues),
        "consume_tps": round(stats.consume_tps, 1),
    }


def _render_describe(r: dict[str, Any]) -> str:
    head = [f"group {r['group']}: " + (
        f"{len(r['connections'])} member(s) online, {r['message_model']}, {r['consume_type']}"
        if r["online"] else "no member online")]  # fmt: skip
    head += [f"  member {c['client_id']} {c['addr']} {c['language']}" for c in r["connections"]]
    head += [f"  subscribes {t}: {e}" for t, e in sorted(r["subscriptions"].items())]
    cols = ["topic", "broker", "queue", "broker_offset", "consumer_offset", "lag"]
    return "\n".join([*head, table(r["queues"], cols), f"total lag: {r['total_lag']}"])


def _timestamp(args: argparse.Namespace) -> int:
    if args.to_earliest:
        return 0
    if args.to_latest:
        return admin.LATEST
    text = args.to_time
    if text.isdigit():
        return int(text)  # epoch milliseconds, as mqadmin -s
    try:
        when = datetime.datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(f"--to-time {text!r}: epoch milliseconds or ISO 8601") from None
    if when.tzinfo is None:
        when = when.astimezone()  # local time, as mqadmin's yyyy-MM-dd#HH:mm:ss:SSS
    return int(when.timestamp() * 1000)


async def _reset(instance: ClientInstance, args: argparse.Namespace) -> dict[str, Any]:
    route = await instance.namesrv.topic_route(args.topic)  # TopicNotFound first
    timestamp = _timestamp(args)
    enabled = args.progress and not args.json
    with ProgressReport("reset", total=len(route.broker_datas), enabled=enabled) as bar:
        result = await admin.reset_offset(
            instance, args.topic, args.group, timestamp, force=not args.no_force,
            progress=bar.advance,
        )  # fmt: skip
    rows = [{"broker": q.broker_name, "queue": q.queue_id, "offset": o}
            for q, o in result.offsets.items()]  # fmt: skip
    return {"group": args.group, "topic": args.topic, "timestamp_ms": timestamp,
            "by_broker": result.by_broker, "queues": rows}  # fmt: skip


def _render_reset(r: dict[str, Any]) -> str:
    how = "by the broker" if r["by_broker"] else "group offline: offsets written"
    return f"reset {r['group']} on {r['topic']} ({how})\n" + table(
        r["queues"], ["broker", "queue", "offset"]
    )


async def _lag(instance: ClientInstance, args: argparse.Namespace) -> dict[str, Any]:
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


def _render_lag(r: dict[str, Any]) -> str:
    body = table(r["queues"], ["broker", "queue", "min", "max", "committed", "lag"])
    return f"{body}\ntotal lag: {r['total_lag']}"


async def _tree(instance: ClientInstance, args: argparse.Namespace) -> dict[str, Any]:
    """Each online member's live actor tree, asked through the broker (GET_CONSUMER_RUNNING
    INFO): rocketmq-actors members put it in their running info; other clients have none."""
    ids = [args.client_id] if args.client_id else await consumer_ids(
        instance, args.group, args.topic)  # fmt: skip
    clients: dict[str, Any] = {}
    for client_id in ids:
        info = await consumer_running_info(instance, args.topic, args.group, client_id)
        raw = info.properties.get(TREE_PROPERTY)
        clients[client_id] = (
            json.loads(raw) if raw else {"client": info.properties.get("clientVersion", "?")}
        )
    return {"group": args.group, "clients": clients}


async def _update(instance: ClientInstance, args: argparse.Namespace) -> dict[str, Any]:
    brokers = await admin.update_group(
        instance, args.group, cluster=args.cluster, consume_enable=not args.disable,
        consume_broadcast_enable=not args.no_broadcast, consume_orderly=args.orderly,
        retry_max_times=args.retry_max_times,
    )  # fmt: skip
    return {"group": args.group, "brokers": brokers}


async def _delete(instance: ClientInstance, args: argparse.Namespace) -> dict[str, Any]:
    brokers = await admin.delete_group(instance, args.group, cluster=args.cluster,
                                       clean_offset=args.clean_offset)  # fmt: skip
    return {"group": args.group, "brokers": brokers}


async def _clone(instance: ClientInstance, args: argparse.Namespace) -> dict[str, Any]:
    brokers = await admin.clone_group_offset(instance, args.group, args.to_group, args.topic,
                                             offline=args.offline)  # fmt: skip
    return {"group": args.group, "to_group": args.to_group, "topic": args.topic,
            "brokers": brokers}  # fmt: skip


def _render_cloned(result: dict[str, Any]) -> str:
    return (f"offsets of {result['group']} on {result['topic']} copied to {result['to_group']} "
            f"on {', '.join(result['brokers'])}")  # fmt: skip


async def _set_mode(instance: ClientInstance, args: argparse.Namespace) -> dict[str, Any]:
    brokers = await admin.set_message_request_mode(
        instance, args.group, args.topic, args.mode, pop_share_queue_num=args.pop_share_queues,
        cluster=args.cluster,
    )  # fmt: skip
    return {"group": args.group, "topic": args.topic, "mode": args.mode, "brokers": brokers}


def _render_set_mode(result: dict[str, Any]) -> str:
    return (f"group {result['group']} reads {result['topic']} by {result['mode']} on "
            f"{', '.join(result['brokers'])}")  # fmt: skip


async def _modes(instance: ClientInstance, args: argparse.Namespace) -> dict[str, Any]:
    return {"modes": await admin.message_request_modes(instance, cluster=args.cluster)}


def _render_modes(result: dict[str, Any]) -> str:
    rows = [
        {"topic": topic, "group": group, "mode": entry["mode"],
         "pop_share_queue_num": entry["pop_share_queue_num"], "brokers": ",".join(entry["brokers"])}
        for topic, groups in result["modes"].items() for group, entry in groups.items()
    ]  # fmt: skip
    if not rows:
        return "no request mode set: every group pulls"
    return table(rows, ["topic", "group", "mode", "pop_share_queue_num", "brokers"])


def _render_changed(result: dict[str, Any]) -> str:
    return f"group {result['group']} on {', '.join(result['brokers'])}"


async def _producers(instance: ClientInstance, args: argparse.Namespace) -> dict[str, Any]:
    found = await admin.producer_connection(instance, args.group, cluster=args.cluster)
    return {"group": args.group, "connections": [
        {"client_id": c.client_id, "addr": c.client_addr, "language": c.language,
         "version": c.version} for c in found
    ]}  # fmt: skip


def _render_producers(result: dict[str, Any]) -> str:
    if not result["connections"]:
        return f"no client of producer group {result['group']} is online"
    return table(result["connections"], ["client_id", "addr", "language", "version"])


def _render_tree(result: dict[str, Any]) -> str:
    blocks = []
    for client_id, tree in result["clients"].items():
        if "kind" in tree:
            blocks.append(f"{client_id}\n{Node.from_dict(tree).render()}")
        else:
            blocks.append(f"{client_id}: no actor tree (a {tree['client']} client)")
    return "\n\n".join(blocks) or f"no client of group {result['group']} is online"


WORK = {"list": _list, "describe": _describe, "update": _update, "delete": _delete,
        "producers": _producers, "reset-offset": _reset, "lag": _lag, "tree": _tree,
        "clone-offset": _clone, "set-request-mode": _set_mode, "request-modes": _modes}  # fmt: skip
RENDER = {"list": _render_list, "describe": _render_describe, "update": _render_changed,
          "delete": _render_changed, "producers": _render_producers,
          "reset-offset": _render_reset, "lag": _render_lag, "tree": _render_tree,
          "clone-offset": _render_cloned, "set-request-mode": _render_set_mode,
          "request-modes": _render_modes}  # fmt: skip
NEEDS = {"describe": ("group",), "update": ("group",), "delete": ("group",),
         "producers": ("group",), "reset-offset": ("group", "topic"), "lag": ("group", "topic"),
         "tree": ("group", "topic"), "clone-offset": ("group", "to_group", "topic"),
         "set-request-mode": ("group", "topic", "mode")}  # fmt: skip


def _run(args: argparse.Namespace) -> int:
    for option in NEEDS.get(args.action, ()):
        if not getattr(args, option):
            raise UsageError(f"group {args.action} needs --{option.replace('_', '-')}")
    if args.group:
        validate_group(args.group)
    if args.to_group:
        validate_group(args.to_group)
    if args.topic:
        validate_topic(args.topic)
    if args.action == "reset-offset":
        if sum(map(bool, (args.to_time, args.to_earliest, args.to_latest))) != 1:
            raise UsageError("reset-offset needs one of --to-time, --to-earliest, --to-latest")
        _timestamp(args)  # a bad --to-time fails before any network I/O
    emit(args, run_with_instance(WORK[args.action], args), RENDER[args.action])
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("group", help="list, describe, create, delete or reset consumer groups; "
                       "lag of a topic; clone offsets; request modes; a producer group's "
                       "clients")  # fmt: skip
    p.add_argument("action", nargs="?", choices=ACTIONS, default="lag",
                   help="default: lag (offsets and lag of --topic)")  # fmt: skip
    add_common(p)
    p.add_argument("--group", help="the consumer group")
    p.add_argument("--topic", help="the topic (describe: only this topic's queues)")
    p.add_argument("--to-time", metavar="WHEN", help="epoch ms or ISO 8601 (local time if naive)")
    p.add_argument("--to-earliest", action="store_true", help="the oldest message kept")
    p.add_argument("--to-latest", action="store_true", help="the end of each queue")
    p.add_argument("--no-force", action="store_true",
                   help="reset-offset: only move offsets back, never forward")  # fmt: skip
    p.add_argument("--cluster", help="update, delete, producers: only this cluster's masters")
    p.add_argument("--retry-max-times", type=int, default=16,
                   help="update: deliveries before the dead-letter queue (default 16)")  # fmt: skip
    p.add_argument("--orderly", action="store_true", help="update: the group consumes in order")
    p.add_argument("--no-broadcast", action="store_true",
                   help="update: refuse broadcasting members")  # fmt: skip
    p.add_argument("--disable", action="store_true", help="update: the group may not consume")
    p.add_argument("--clean-offset", action="store_true",
                   help="delete: its committed offsets too")  # fmt: skip
    p.add_argument("--to-group", help="clone-offset: the group --group's offsets are copied to")
    p.add_argument("--mode", choices=("PULL", "POP"),
                   help="set-request-mode: how --group is to read --topic (5.x)")  # fmt: skip
    p.add_argument("--pop-share-queues", type=int, default=0, metavar="N",
                   help="set-request-mode: POP members after each sharing its queues")  # fmt: skip
    p.add_argument("--offline", action="store_true",
                   help="clone-offset: copy even while --group's members are online")  # fmt: skip
    add_progress_flag(p)
    p.set_defaults(handler=_run)

    t = sub.add_parser("tree", help="the live actor tree of each online member of a group")
    add_common(t)
    t.add_argument("--group", required=True)
    t.add_argument("--topic", required=True, help="a topic the group consumes")
    t.add_argument("--client-id", help="only this member (default: every online member)")
    t.set_defaults(handler=_run, action="tree", to_time=None, to_earliest=False,
                   to_latest=False, cluster=None, to_group=None, mode=None)  # fmt: skip
