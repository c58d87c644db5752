"""``rocketmq-actors message query`` and ``message show`` (mqadmin queryMsgByKey,
queryMsgByUniqueKey, queryMsgById).

message query --topic T --key K [--unique] [--begin WHEN] [--end WHEN] [--max N]
message show ID [--topic T]      ID: an offset message id, or a unique key (needs --topic)
message decode ID                which form an id is and what it holds (no network I/O)
message trace ID [--trace-topic T]   its message trace records (mqadmin queryMsgTraceById)
"""

from __future__ import annotations

import argparse
import datetime
import time
from typing import Any

from rocketmq_actors import query
from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.names import validate_topic
from rocketmq_actors.protocol.msgid import MessageIdInfo
from rocketmq_actors.protocol.records import MessageExt
from rocketmq_actors.protocol.trace import RMQ_SYS_TRACE_TOPIC

from .common import UsageError, add_namesrv, emit, run_with_instance, table
from .msgtrace import render_trace, trace
from .peek import record

COLUMNS = ["msg_id", "offset_msg_id", "broker", "queue", "offset", "stored", "keys", "tags"]


def parse_when(option: str, text: str | None) -> int | None:
    """Epoch milliseconds (as mqadmin's -b/-e) or ISO 8601, local time when naive."""
    if text is None:
        return None
    if text.isdigit():
        return int(text)
    try:
        when = datetime.datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(f"{option} {text!r}: epoch milliseconds or ISO 8601") from None
    if when.tzinfo is None:
        when = when.astimezone()
    return int(when.timestamp() * 1000)


def message_record(message: MessageExt) -> dict[str, Any]:
    return {**record(message), "offset_msg_id": message.offset_msg_id,
            "store_host": message.store_host, "born_host": message.born_host,
            "commit_log_offset": message.commit_log_offset,
            "reconsume_times": message.reconsume_times}  # fmt: skip


def id_record(info: MessageIdInfo) -> dict[str, Any]:
    out: dict[str, Any] = {"msg_id": info.msg_id, "kind": info.kind}
    if info.kind == "offset":
        out.update(store_host=info.store_host, commit_log_offset=info.commit_log_offset)
    else:
        out.update(client_ip=info.client_ip, pid=info.pid,
                   class_loader_hash=info.class_loader_hash, counter=info.counter,
                   born_time_ms=info.born_time_ms(time.time_ns() // 1_000_000))  # fmt: skip
        out["born_time"] = datetime.datetime.fromtimestamp(out["born_time_ms"] / 1000).isoformat(
            timespec="milliseconds"
        )
    return out


async def _query(instance: ClientInstance, args: argparse.Namespace) -> dict[str, Any]:
    begin = parse_when("--begin", args.begin)
    end = parse_when("--end", args.end)
    kwargs: dict[str, Any] = {"max_num": args.max}
    if begin is not None:
        kwargs["begin_ms"] = begin
    if end is not None:
        kwargs["end_ms"] = end
    if args.unique:
        if begin is None:  # Java's queryMessageByUniqKey: the last three days by default
            kwargs["begin_ms"] = max(0, time.time_ns() // 1_000_000 - query.UNIQUE_KEY_WINDOW_MS)
        kwargs["max_num"] = query.UNIQUE_KEY_MAX_NUM
    result = await query.query_messages(
        instance, args.topic, args.key, unique=args.unique, **kwargs
    )
    return {
        "topic": args.topic, "key": args.key, "unique": args.unique,
        "messages": [message_record(m) for m in result.messages],
        "index_last_update_ms": result.index_last_update_ms, "failed_brokers": result.failed,
    }  # fmt: skip


def _stored(row: dict[str, Any]) -> str:
    ms = row["store_timestamp_ms"]
    return datetime.datetime.fromtimestamp(ms / 1000).isoformat(timespec="milliseconds")


def _render_query(result: dict[str, Any]) -> str:
    rows = [{**m, "keys": ",".join(m["keys"]) or None, "stored": _stored(m), "broker": m["broker"]}
            for m in result["messages"]]  # fmt: skip
    lines = [table(rows, COLUMNS)] if rows else [f"no message with key {result['key']!r}"]
    lines += [f"broker {name} failed: {error}" for name, error in result["failed_brokers"].items()]
    return "\n".join(lines)


async def _show(instance: ClientInstance, args: argparse.Namespace) -> dict[str, Any]:
    message = await query.find_message(instance, args.id, topic=args.topic)
    return {"id": id_record(query.decode_message_id(args.id)), "message": message_record(message)}


def _render_show(result: dict[str, Any]) -> str:
    m = result["message"]
    body = m.get("body", f"<binary, base64: {m.get('body_base64')}>")
    fields = [
        ("topic", m["topic"]), ("msg_id", m["msg_id"]), ("offset_msg_id", m["offset_msg_id"]),
        ("queue", f"{m['broker'] or '-'}:{m['queue']}@{m['offset']}"),
        ("tags", m["tags"]), ("keys", ",".join(m["keys"])), ("stored", _stored(m)),
        ("store_host", m["store_host"]), ("born_host", m["born_host"]),
        ("reconsume_times", m["reconsume_times"]),
        ("properties", " ".join(f"{k}={v}" for k, v in sorted(m["properties"].items()))),
        ("body", body),
    ]  # fmt: skip
    return "\n".join(f"{name:<16}{'-' if value in (None, '') else value}" for name, value in fields)


def _render_decode(result: dict[str, Any]) -> str:
    return "\n".join(f"{k:<18}{v}" for k, v in result.items())


def _run(args: argparse.Namespace) -> int:
    if args.topic:
        validate_topic(args.topic)
    if args.action == "decode":
        if not args.id:
            raise UsageError("message decode needs an ID")
        emit(args, id_record(query.decode_message_id(args.id)), _render_decode)
        return 0
    if not args.namesrv:
        raise UsageError(f"message {args.action}: give --namesrv host:port, or set $NAMESRV_ADDR")
    if args.action == "query":
        if not args.topic or not args.key:
            raise UsageError("message query needs --topic and --key")
        if args.max < 1:
            raise UsageError("--max must be >= 1")
        begin, end = parse_when("--begin", args.begin), parse_when("--end", args.end)
        if begin is not None and end is not None and begin > end:
            raise UsageError("--begin is after --end")
        emit(args, run_with_instance(_query, args), _render_query)
        return 0
    if not args.id:
        raise UsageError(f"message {args.action} needs an ID")
    if args.action == "trace":
        if args.trace_topic:
            validate_topic(args.trace_topic)
        emit(args, run_with_instance(trace, args), render_trace)
        return 0
    info = query.decode_message_id(args.id)  # a malformed id: exit 2, before connecting
    if info.kind == "unique" and not args.topic:
        raise UsageError(f"{args.id} is a unique key (the client's id): give its --topic")
    emit(args, run_with_instance(_show, args), _render_show)
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("message", help="find stored messages by key or id, decode an id")
    p.add_argument("action", choices=["query", "show", "decode", "trace"])
    p.add_argument("id", nargs="?", help="show/decode: an offset message id or a unique key")
    add_namesrv(p)  # (decode needs no NameServer: _run checks it for the others)
    p.add_argument("--json", action="store_true", help="one JSON document on stdout")
    p.add_argument("--topic", help="query: the topic; show: needed for a unique key")
    p.add_argument("--key", help="query: a key the messages carry (or, --unique, the msg id)")
    p.add_argument("--unique", action="store_true",
                   help="query: --key is a unique key (UNIQ_KEY), not a key")  # fmt: skip
    p.add_argument("--begin", metavar="WHEN", help="stored at or after: epoch ms or ISO 8601")
    p.add_argument("--end", metavar="WHEN", help="stored at or before: epoch ms or ISO 8601")
    p.add_argument("--max", type=int, default=64, help="at most N per broker (default 64)")
    p.add_argument("--trace-topic", help=f"trace: the trace topic (default {RMQ_SYS_TRACE_TOPIC})")
    p.set_defaults(handler=_run, namesrv_checked_by_command=True)
