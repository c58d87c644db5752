"""Message trace records, as the Java client writes them to ``RMQ_SYS_TRACE_TOPIC``.

Java: ``org.apache.rocketmq.client.trace`` - ``TraceDataEncoder`` (the record layouts),
``TraceConstants`` (the separators), ``TraceContext``/``TraceBean`` (the fields). A record is
its fields joined by ``CONTENT_SPLITOR`` (U+0001) and ended by ``FIELD_SPLITOR`` (U+0002); a
trace message's body is records one after another, UTF-8. Java renders an absent string field
(``null``) as the four letters ``null``, booleans as ``true``/``false``, enums by ordinal
(message type, consume return type) or by name (transaction state); the layouts below are
5.3.3's (a SubAfter ends with its time stamp and group, which the 4.9 decoder ignores).

:func:`encode_record` gives what ``TraceDataEncoder.encoderFromContextBean`` gives for a
context of one bean: the record's text and the keys the trace message is indexed by (the
traced message id and its keys, so that ``queryMsgTraceById`` finds the records).
:func:`decode_records` reads a trace message body back (for tests and the CLI), as
``decoderFromTraceDataString`` does.
"""

from __future__ import annotations

import enum

import attrs

from .errors import ProtocolError

__all__ = [
    "CONTENT_SPLITOR",
    "DEFAULT_REGION",
    "FIELD_SPLITOR",
    "RMQ_SYS_TRACE_TOPIC",
    "TRACE_GROUP_PREFIX",
    "ConsumeReturnType",
    "EndTransactionRecord",
    "PubRecord",
    "SubAfterRecord",
    "SubBeforeRecord",
    "TraceMessageType",
    "TraceRecord",
    "decode_records",
    "encode_record",
]

CONTENT_SPLITOR = "\x01"  # TraceConstants.CONTENT_SPLITOR
FIELD_SPLITOR = "\x02"  # TraceConstants.FIELD_SPLITOR
RMQ_SYS_TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"  # TopicValidator.RMQ_SYS_TRACE_TOPIC
DEFAULT_REGION = "DefaultRegion"  # MixAll.DEFAULT_TRACE_REGION_ID
TRACE_GROUP_PREFIX = "_INNER_TRACE_PRODUCER"  # TraceConstants.GROUP_NAME_PREFIX
_NULL = "null"  # how Java's StringBuilder renders a null String


class TraceMessageType(enum.IntEnum):
    """``org.apache.rocketmq.common.message.MessageType``, written by ordinal."""

    NORMAL = 0  # Normal_Msg
    TRANS_HALF = 1  # Trans_Msg_Half
    TRANS_COMMIT = 2  # Trans_msg_Commit
    DELAY = 3  # Delay_Msg
    ORDER = 4  # Order_Msg


class ConsumeReturnType(enum.IntEnum):
    """``ConsumeReturnType``: a SubAfter's context code is its ordinal."""

    SUCCESS = 0
    TIME_OUT = 1
    EXCEPTION = 2
    RETURNNULL = 3
    FAILED = 4


TRANSACTION_STATES = ("COMMIT_MESSAGE", "ROLLBACK_MESSAGE", "UNKNOW")  # LocalTransactionState


@attrs.frozen(kw_only=True)
class PubRecord:
    """A send (SendMessageTraceHookImpl): after the broker's answer."""

    timestamp: int  # ms, when the send started
    region_id: str
    group: str
    topic: str
    msg_id: str
    tags: str | None
    keys: str | None  # the message's keys joined by spaces, as Message.getKeys()
    store_host: str  # the broker address sent to
    body_length: int
    cost_ms: int
    msg_type: TraceMessageType
    offset_msg_id: str | None
    success: bool


@attrs.frozen(kw_only=True)
class SubBeforeRecord:
    """A message handed to the handler (ConsumeMessageTraceHookImpl.consumeMessageBefore)."""

    timestamp: int
    region_id: str
    group: str
    request_id: str  # one per handler call; the SubAfter repeats it
    msg_id: str
    retry_times: int  # reconsume times
    keys: str | None
    topic: str = ""  # (not written: the dispatcher's batching key, as Java's bean topic)


@attrs.frozen(kw_only=True)
class SubAfterRecord:
    """The handler's outcome (consumeMessageAfter)."""

    request_id: str
    msg_id: str
    cost_ms: int
    success: bool
    keys: str | None
    context_code: int  # ConsumeReturnType ordinal
    timestamp: int
    group: str
    topic: str = ""  # (not written)


@attrs.frozen(kw_only=True)
class EndTransactionRecord:
    """A transaction's end (EndTransactionTraceHookImpl)."""

    timestamp: int
    region_id: str
    group: str
    topic: str
    msg_id: str
    tags: str | None
    keys: str | None
    store_host: str
    transaction_id: str | None
    transaction_state: str  # COMMIT_MESSAGE, ROLLBACK_MESSAGE, UNKNOW
    from_check: bool
    msg_type: TraceMessageType = TraceMessageType.TRANS_COMMIT


TraceRecord = PubRecord | SubBeforeRecord | SubAfterRecord | EndTransactionRecord


def _s(value: str | None) -> str:
    return _NULL if value is None else value


def _b(value: bool) -> str:
    return "true" if value else "false"


def _fields(record: TraceRecord) -> list[str]:
    if isinstance(record, PubRecord):
        return [
            "Pub", str(record.timestamp), record.region_id, record.group, record.topic,
            record.msg_id, _s(record.tags), _s(record.keys), record.store_host,
            str(record.body_length), str(record.cost_ms), str(int(record.msg_type)),
            _s(record.offset_msg_id), _b(record.success),
        ]  # fmt: skip
    if isinstance(record, SubBeforeRecord):
        return [
            "SubBefore", str(record.timestamp), record.region_id, record.group,
            record.request_id, record.msg_id, str(record.retry_times), _s(record.keys),
        ]  # fmt: skip
    if isinstance(record, SubAfterRecord):
        return [
            "SubAfter", record.request_id, record.msg_id, str(record.cost_ms),
            _b(record.success), _s(record.keys), str(record.context_code),
            str(record.timestamp), record.group,
        ]  # fmt: skip
    return [
        "EndTransaction", str(record.timestamp), record.region_id, record.group, record.topic,
        record.msg_id, _s(record.tags), _s(record.keys), record.store_host,
        str(int(record.msg_type)), _s(record.transaction_id), record.transaction_state,
        _b(record.from_check),
    ]  # fmt: skip


def encode_record(record: TraceRecord) -> tuple[str, list[str]]:
    """The record's text (ended by FIELD_SPLITOR) and the keys the trace message carries for
    it: the traced message id, then each of its keys (5.3.3 splits them at spaces)."""
    text = CONTENT_SPLITOR.join(_fields(record)) + FIELD_SPLITOR
    keys = [record.msg_id]
    if record.keys:
        keys.extend(k for k in record.keys.split(" ") if k)
    return text, keys


def _opt(value: str) -> str | None:
    return None if value == _NULL else value


def _int(value: str, field: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise ProtocolError("bad-trace-record", f"{field} is not a number: {value!r}") from None


def _msg_type(value: str) -> TraceMessageType:
    try:
        return TraceMessageType(_int(value, "msg_type"))
    except ValueError:
        raise ProtocolError("bad-trace-record", f"unknown message type {value!r}") from None


def _decode_one(line: list[str]) -> TraceRecord | None:
    kind = line[0]
    if kind == "Pub" and len(line) >= 13:
        offset, success = (line[12], line[13]) if len(line) >= 14 else (_NULL, line[12])
        return PubRecord(
            timestamp=_int(line[1], "timestamp"), region_id=line[2], group=line[3],
            topic=line[4], msg_id=line[5], tags=_opt(line[6]), keys=_opt(line[7]),
            store_host=line[8], body_length=_int(line[9], "body_length"),
            cost_ms=_int(line[10], "cost_ms"),
            msg_type=_msg_type(line[11]),
            offset_msg_id=_opt(offset), success=success == "true",
        )  # fmt: skip
    if kind == "SubBefore" and len(line) >= 8:
        return SubBeforeRecord(
            timestamp=_int(line[1], "timestamp"), region_id=line[2], group=line[3],
            request_id=line[4], msg_id=line[5], retry_times=_int(line[6], "retry_times"),
            keys=_opt(line[7]),
        )  # fmt: skip
    if kind == "SubAfter" and len(line) >= 6:
        return SubAfterRecord(
            request_id=line[1], msg_id=line[2], cost_ms=_int(line[3], "cost_ms"),
            success=line[4] == "true", keys=_opt(line[5]),
            context_code=_int(line[6], "context_code") if len(line) >= 7 else 0,
            timestamp=_int(line[7], "timestamp") if len(line) >= 8 else 0,
            group=line[8] if len(line) >= 9 else "",
        )  # fmt: skip
    if kind == "EndTransaction" and len(line) >= 13:
        return EndTransactionRecord(
            timestamp=_int(line[1], "timestamp"), region_id=line[2], group=line[3],
            topic=line[4], msg_id=line[5], tags=_opt(line[6]), keys=_opt(line[7]),
            store_host=line[8], msg_type=_msg_type(line[9]),
            transaction_id=_opt(line[10]), transaction_state=line[11],
            from_check=line[12] == "true",
        )  # fmt: skip
    if kind in {"Pub", "SubBefore", "SubAfter", "EndTransaction"}:
        raise ProtocolError("bad-trace-record", f"{kind} record of {len(line)} fields")
    return None  # another type (5.5's Recall, ...): skipped, as Java skips unknown ones


def decode_records(body: bytes | str) -> list[TraceRecord]:
    """The records of a trace message body (types this module does not know are skipped; a
    known type with too few fields or a malformed number is a ``ProtocolError``)."""
    if isinstance(body, bytes):
        try:
            body = body.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ProtocolError("bad-trace-record", f"not UTF-8: {exc}") from None
    records: list[TraceRecord] = []
    for text in body.split(FIELD_SPLITOR):
        if not text:
            continue
        record = _decode_one(text.split(CONTENT_SPLITOR))
        if record is not None:
            records.append(record)
    return records
