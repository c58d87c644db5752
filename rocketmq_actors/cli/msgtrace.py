"""``rocketmq-actors message trace ID`` (mqadmin queryMsgTraceById): the trace records about a
message, read from the trace topic by key as the Java tool reads them."""

from __future__ import annotations

import argparse
import datetime
from typing import Any

from rocketmq_actors import query
from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.protocol.errors import ProtocolError
from rocketmq_actors.protocol.trace import (
    RMQ_SYS_TRACE_TOPIC,
    EndTransactionRecord,
    PubRecord,
    SubAfterRecord,
    SubBeforeRecord,
    TraceRecord,
    decode_records,
)

from .common import table

__all__ = ["render_trace", "trace"]

COLUMNS = ["type", "group", "time", "cost_ms", "status", "client_host", "detail"]


def _time(ms: int) -> str | None:
    if not ms:
        return None
    return datetime.datetime.fromtimestamp(ms / 1000).isoformat(timespec="milliseconds")


def trace_row(record: TraceRecord, client_host: str) -> dict[str, Any]:
    """One record as a row: what mqadmin prints (type, group, client host, time, cost,
    status) and a detail of its own type."""
    row: dict[str, Any] = {
        "type": type(record).__name__.removesuffix("Record"), "group": record.group or None,
        "time_ms": record.timestamp, "time": _time(record.timestamp), "cost_ms": None,
        "status": None, "client_host": client_host, "detail": None,
    }  # fmt: skip
    if isinstance(record, PubRecord):
        row.update(cost_ms=record.cost_ms, status="success" if record.success else "failed",
                   detail=f"topic={record.topic} store_host={record.store_host} "
                          f"type={record.msg_type.name}")  # fmt: skip
    elif isinstance(record, SubBeforeRecord):
        row.update(detail=f"request={record.request_id} retry_times={record.retry_times}")
    elif isinstance(record, SubAfterRecord):
        row.update(cost_ms=record.cost_ms, status="success" if record.success else "failed",
                   detail=f"request={record.request_id} code={record.context_code}")  # fmt: skip
    elif isinstance(record, EndTransactionRecord):
        check = "true" if record.from_check else "false"
        row.update(status=record.transaction_state,
                   detail=f"topic={record.topic} from_check={check}")  # fmt: skip
    return row


async def trace(instance: ClientInstance, args: argparse.Namespace) -> dict[str, Any]:
    topic = args.trace_topic or RMQ_SYS_TRACE_TOPIC
    found = await query.query_messages(instance, topic, args.id, max_num=args.max)
    rows = []
    for message in found.messages:
        try:
            records = decode_records(message.body)
        except ProtocolError:  # not a trace message (a topic of one's own holds anything)
            continue
        rows += [trace_row(r, message.born_host) for r in records if r.msg_id == args.id]
    rows.sort(key=lambda row: row["time_ms"])
    return {"msg_id": args.id, "trace_topic": topic, "records": rows,
            "failed_brokers": found.failed}  # fmt: skip


def render_trace(result: dict[str, Any]) -> str:
    rows = result["records"]
    lines = [table(rows, COLUMNS)] if rows else [f"no trace of {result['msg_id']}"]
    lines += [f"broker {name} failed: {error}" for name, error in result["failed_brokers"].items()]
    return "\n".join(lines)
