"""POP consumption on the wire (5.x brokers): the request and response headers of POP_MESSAGE,
ACK_MESSAGE, BATCH_ACK_MESSAGE and CHANGE_MESSAGE_INVISIBLETIME, the ack handle ("extraInfo",
Java's ``ExtraInfoUtil``) and the per-message handles of a POP response.

A popped message is settled with its handle, the space-separated string Java keeps in the
``POP_CK`` property::

    <ck queue offset> <pop time ms> <invisible time ms> <revive queue id> <retry flag>
    <broker name> <queue id> [<message queue offset>]

The retry flag says which topic the message was popped from: ``0`` the topic itself, ``1``
the pop retry topic ``%RETRY%<group>_<topic>``, ``2`` ``%RETRY%<group>+<topic>`` (Java's
``KeyBuilder.buildPopRetryTopicV1/V2``); the ack goes to that topic. A revive queue id of
999 (``KeyBuilder.POP_ORDER_REVIVE_QUEUE``) marks an orderly pop.

The POP response says, per (retry flag, queue id), where the check point starts
(``startOffsetInfo``: ``flag queueId offset;...``), the queue offsets of the messages
(``msgOffsetInfo``: ``flag queueId o1,o2;...``) and, orderly, how often each was delivered
(``orderCountInfo``: ``flag queueId count`` or ``flag qo<queueId>%<offset> count``);
:func:`message_handles` builds each message's handle from them as Java's
``MQClientAPIImpl.processPopResponse`` does. A retry comes back under the topic asked for,
its handle already in its ``POP_CK`` property (the broker rewrote it): that one is kept.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Sequence

import attrs

from .errors import ProtocolError
from .headers import Header, wire

__all__ = [
    "ORDER_REVIVE_QUEUE",
    "AckMessageRequestHeader",
    "ChangeInvisibleTimeRequestHeader",
    "ChangeInvisibleTimeResponseHeader",
    "ExtraInfo",
    "PopMessageRequestHeader",
    "PopMessageResponseHeader",
    "PoppedMessage",
    "encode_batch_ack",
    "message_handles",
    "parse_offset_info",
    "retry_flag",
]

#: KeyBuilder.POP_ORDER_REVIVE_QUEUE: the revive queue id of an orderly pop's handles
ORDER_REVIVE_QUEUE = 999
#: ConsumeInitMode: where a group that never popped a queue starts
INIT_MODE_MIN, INIT_MODE_MAX = 0, 1

_SEP = " "  # MessageConst.KEY_SEPARATOR


@attrs.define(kw_only=True, slots=True)
class PopMessageRequestHeader(Header):
    consumer_group: str = wire("consumerGroup")
    topic: str = wire("topic")
    queue_id: int = wire("queueId")  # -1: every queue of the topic on that broker
    max_msg_nums: int = wire("maxMsgNums")
    invisible_time: int = wire("invisibleTime")  # ms
    poll_time: int = wire("pollTime")  # ms the broker holds the request when nothing is there
    born_time: int = wire("bornTime")  # ms, the client's clock when sent
    init_mode: int = wire("initMode")
    exp_type: str | None = wire("expType", default=None)
    exp: str | None = wire("exp", default=None)
    order: bool = wire("order", default=False)
    attempt_id: str | None = wire("attemptId", default=None)
    broker_name: str | None = wire("bname", default=None)


@attrs.define(kw_only=True, slots=True)
class PopMessageResponseHeader(Header):
    pop_time: int = wire("popTime")
    invisible_time: int = wire("invisibleTime")
    revive_qid: int = wire("reviveQid")
    rest_num: int = wire("restNum")
    start_offset_info: str | None = wire("startOffsetInfo", default=None)
    msg_offset_info: str | None = wire("msgOffsetInfo", default=None)
    order_count_info: str | None = wire("orderCountInfo", default=None)


@attrs.define(kw_only=True, slots=True)
class AckMessageRequestHeader(Header):
    consumer_group: str = wire("consumerGroup")
    topic: str = wire("topic")  # the topic popped from (the pop retry topic for a retry)
    queue_id: int = wire("queueId")
    extra_info: str = wire("extraInfo")
    offset: int = wire("offset")
    broker_name: str | None = wire("bname", default=None)


@attrs.define(kw_only=True, slots=True)
class ChangeInvisibleTimeRequestHeader(Header):
    consumer_group: str = wire("consumerGroup")
    topic: str = wire("topic")
    queue_id: int = wire("queueId")
    extra_info: str = wire("extraInfo")
    offset: int = wire("offset")
    invisible_time: int = wire("invisibleTime")  # ms from now
    broker_name: str | None = wire("bname", default=None)


@attrs.define(kw_only=True, slots=True)
class ChangeInvisibleTimeResponseHeader(Header):
    pop_time: int = wire("popTime")
    invisible_time: int = wire("invisibleTime")
    revive_qid: int = wire("reviveQid")


def retry_flag(topic: str) -> str:
    """ExtraInfoUtil.getRetry(topic): 2 for a V2 pop retry topic, 1 for any other retry
    topic, 0 otherwise."""
    if topic.startswith("%RETRY%"):
        return "2" if "+" in topic else "1"
    return "0"


def _int(field: str, raw: str, text: str) -> int:
    try:
        return int(raw)
    except ValueError:
        raise ProtocolError("bad-extra-info", f"{field} {raw!r} in {text!r}") from None


@attrs.frozen
class ExtraInfo:
    """An ack handle (Java's ``extraInfo`` / ``POP_CK`` property)."""

    ck_queue_offset: int
    pop_time: int
    invisible_time: int
    revive_qid: int
    retry: str
    broker_name: str
    queue_id: int
    queue_offset: int | None = None

    @classmethod
    def parse(cls, text: str) -> ExtraInfo:
        """A handle from its string; :class:`ProtocolError` when it is not one."""
        if not isinstance(text, str):
            raise ProtocolError("bad-extra-info", f"an ack handle is a str, not {text!r}")
        parts = text.split(_SEP)
        if len(parts) not in (7, 8):
            raise ProtocolError("bad-extra-info", f"7 or 8 fields expected: {text!r}")
        if parts[4] not in ("0", "1", "2"):
            raise ProtocolError("bad-extra-info", f"retry flag {parts[4]!r} in {text!r}")
        return cls(
            ck_queue_offset=_int("ck offset", parts[0], text),
            pop_time=_int("pop time", parts[1], text),
            invisible_time=_int("invisible time", parts[2], text),
            revive_qid=_int("revive queue id", parts[3], text),
            retry=parts[4],
            broker_name=parts[5],
            queue_id=_int("queue id", parts[6], text),
            queue_offset=_int("queue offset", parts[7], text) if len(parts) == 8 else None,
        )

    def encode(self) -> str:
        fields: list[object] = [
            self.ck_queue_offset, self.pop_time, self.invisible_time, self.revive_qid,
            self.retry, self.broker_name, self.queue_id,
        ]  # fmt: skip
        if self.queue_offset is not None:
            fields.append(self.queue_offset)
        return _SEP.join(str(f) for f in fields)

    def __str__(self) -> str:
        return self.encode()

    @property
    def offset(self) -> int:
        """The message's queue offset (the ck offset in a handle without one)."""
        return self.ck_queue_offset if self.queue_offset is None else self.queue_offset

    @property
    def orderly(self) -> bool:
        return self.revive_qid == ORDER_REVIVE_QUEUE

    def real_topic(self, topic: str, group: str) -> str:
        """ExtraInfoUtil.getRealTopic: the topic the message was popped from."""
        if self.retry == "1":
            return f"%RETRY%{group}_{topic}"
        if self.retry == "2":
            return f"%RETRY%{group}+{topic}"
        return topic


def parse_offset_info(text: str | None) -> dict[str, list[int]]:
    """``startOffsetInfo`` / ``msgOffsetInfo`` / ``orderCountInfo``: ``"flag@key"`` -> the
    numbers (one for the start offset and the count, the offsets for msgOffsetInfo)."""
    out: dict[str, list[int]] = {}
    if not text:
        return out
    for one in text.split(";"):
        parts = one.split(_SEP)
        if len(parts) != 3:
            raise ProtocolError("bad-offset-info", f"3 fields expected in {one!r} of {text!r}")
        key = f"{parts[0]}@{parts[1]}"
        if key in out:
            raise ProtocolError("bad-offset-info", f"duplicate {key!r} in {text!r}")
        out[key] = [_int(key, n, text) for n in parts[2].split(",")]
    return out


@attrs.frozen
class PoppedMessage:
    """What a message of a POP response needs besides its record: where it came from."""

    topic: str  # as stored: the pop retry topic for a retry
    queue_id: int
    queue_offset: int
    reconsume_times: int
    #: the handle a broker puts in the POP_CK property of a retry whose topic it rewrote to
    #: the one asked for (PopMessageProcessor, unless popResponseReturnActualRetryTopic)
    pop_ck: str | None = None


def message_handles(
    messages: Sequence[PoppedMessage],
    header: PopMessageResponseHeader,
    *,
    broker_name: str,
    order: bool,
) -> list[tuple[ExtraInfo, int | None]]:
    """Each message's handle and, orderly, how often the broker delivered it (None: unknown),
    as ``MQClientAPIImpl.processPopResponse`` builds them (LMQ topics aside)."""
    start = parse_offset_info(header.start_offset_info)
    offsets = parse_offset_info(header.msg_offset_info)
    counts = parse_offset_info(header.order_count_info) if order else {}
    out: list[tuple[ExtraInfo, int | None]] = []
    for message in messages:
        if message.pop_ck:  # (Java keeps it as it is)
            out.append((ExtraInfo.parse(message.pop_ck), None))
            continue
        flag = retry_flag(message.topic)
        key = f"{flag}@{message.queue_id}"
        if not start:  # an old broker: the first message of each queue is the check point
            ck = next(m.queue_offset for m in messages if not m.pop_ck
                      and m.topic == message.topic and m.queue_id == message.queue_id)  # fmt: skip
            out.append((_handle(ck, message, header, flag, broker_name), None))
            continue
        if key not in start or key not in offsets:
            raise ProtocolError("bad-offset-info", f"no offsets for {key} in the POP response")
        count = None
        if order:
            found = counts.get(f"{flag}@qo{message.queue_id}%{message.queue_offset}")
            found = found or counts.get(key)
            count = found[0] if found else None
        out.append((_handle(start[key][0], message, header, flag, broker_name), count))
    return out


def _handle(
    ck: int, message: PoppedMessage, header: PopMessageResponseHeader, flag: str, broker: str
) -> ExtraInfo:
    return ExtraInfo(
        ck_queue_offset=ck, pop_time=header.pop_time, invisible_time=header.invisible_time,
        revive_qid=header.revive_qid, retry=flag, broker_name=broker, queue_id=message.queue_id,
        queue_offset=message.queue_offset,
    )  # fmt: skip


def _bitset(bits: Iterable[int]) -> str:
    """java.util.BitSet.toByteArray (little-endian, trailing zero bytes dropped) as fastjson
    writes a byte[]: base64."""
    value = 0
    for bit in bits:
        value |= 1 << bit
    raw = value.to_bytes((value.bit_length() + 7) // 8, "little")
    return base64.b64encode(raw).decode()


def encode_batch_ack(group: str, topic: str, handles: Sequence[ExtraInfo]) -> bytes:
    """BATCH_ACK_MESSAGE's body (BatchAckMessageRequestBody) for handles of one broker, merged
    as ``MQClientAPIImpl.batchAckMessageAsync`` merges them: one BatchAck per (retry flag,
    queue, ck offset, pop time), a bit per message offset past the ck offset."""
    if not handles:
        raise ProtocolError("bad-batch-ack", "a batch ack needs at least one handle")
    merged: dict[tuple[str, int, int, int], tuple[ExtraInfo, set[int]]] = {}
    for h in handles:
        key = (h.retry, h.queue_id, h.ck_queue_offset, h.pop_time)
        merged.setdefault(key, (h, set()))[1].add(h.offset - h.ck_queue_offset)
    acks = [
        {"c": group, "t": topic, "r": h.retry, "so": h.ck_queue_offset, "q": h.queue_id,
         "rq": h.revive_qid, "pt": h.pop_time, "it": h.invisible_time, "b": _bitset(bits)}
        for h, bits in merged.values()
    ]  # fmt: skip
    body = {"brokerName": handles[0].broker_name, "acks": acks}
    return json.dumps(body, separators=(",", ":")).encode()
