"""Messages on the wire: properties, ids, tag hashes, batch bodies and stored-message decoding."""

from __future__ import annotations

import binascii
import ipaddress
import itertools
import os
import random
import struct
import time
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Final

import attrs

from .errors import ProtocolError

__all__ = [
    "BATCH_PROPS_LENGTH",
    "BATCH_RECORD_HEAD",
    "MAX_BATCH_PROPERTIES",
    "MAX_MESSAGE_SIZE",
    "Message",
    "MessageSysFlag",
    "Property",
    "PullSysFlag",
    "UniqueIdGenerator",
    "decode_offset_msg_id",
    "decode_properties",
    "encode_batch",
    "encode_properties",
    "host_addr",
    "java_string_hash",
    "keys_of",
    "offset_msg_id",
    "user_properties",
]

#: The broker's and Java client's default ``maxMessageSize`` (4 MiB).
MAX_MESSAGE_SIZE = 4 * 1024 * 1024
NAME_VALUE_SEP = "\x01"
PROPERTY_SEP = "\x02"


class MessageSysFlag:
    """Bits of a message's ``sysFlag`` (send header ``f`` and stored records)."""

    COMPRESSED: Final = 0x1
    MULTI_TAGS: Final = 0x2
    TRANSACTION_PREPARED: Final = 0x4
    TRANSACTION_COMMIT: Final = 0x8
    TRANSACTION_ROLLBACK: Final = 0xC
    TRANSACTION_MASK: Final = 0xC
    BORNHOST_V6: Final = 0x10
    STOREHOST_V6: Final = 0x20
    NEED_UNWRAP: Final = 0x40
    INNER_BATCH: Final = 0x80
    COMPRESSION_MASK: Final = 0x700
    COMPRESSION_LZ4: Final = 0x100
    COMPRESSION_ZSTD: Final = 0x200
    COMPRESSION_ZLIB: Final = 0x300


class PullSysFlag:
    """Bits of PULL_MESSAGE's ``sysFlag``."""

    COMMIT_OFFSET: Final = 0x1
    SUSPEND: Final = 0x2
    SUBSCRIPTION: Final = 0x4
    CLASS_FILTER: Final = 0x8
    LITE_PULL: Final = 0x10

    @staticmethod
    def build(*, commit_offset: bool, suspend: bool, subscription: bool) -> int:
        return (
            (PullSysFlag.COMMIT_OFFSET if commit_offset else 0)
            | (PullSysFlag.SUSPEND if suspend else 0)
            | (PullSysFlag.SUBSCRIPTION if subscription else 0)
        )


class Property:
    """Well-known message property names."""

    TAGS: Final = "TAGS"
    KEYS: Final = "KEYS"
    WAIT: Final = "WAIT"
    DELAY: Final = "DELAY"
    TIMER_DELIVER_MS: Final = "TIMER_DELIVER_MS"
    TIMER_DELAY_SEC: Final = "TIMER_DELAY_SEC"
    TIMER_DELAY_MS: Final = "TIMER_DELAY_MS"
    UNIQ_KEY: Final = "UNIQ_KEY"
    TRAN_MSG: Final = "TRAN_MSG"
    PGROUP: Final = "PGROUP"
    CHECK_IMMUNITY_TIME_IN_SECONDS: Final = "CHECK_IMMUNITY_TIME_IN_SECONDS"
    TRANSACTION_ID: Final = "__transactionId__"
    RETRY_TOPIC: Final = "RETRY_TOPIC"
    REAL_TOPIC: Final = "REAL_TOPIC"
    REAL_QID: Final = "REAL_QID"
    RECONSUME_TIME: Final = "RECONSUME_TIME"
    MAX_RECONSUME_TIMES: Final = "MAX_RECONSUME_TIMES"
    ORIGIN_MESSAGE_ID: Final = "ORIGIN_MESSAGE_ID"
    MIN_OFFSET: Final = "MIN_OFFSET"
    MAX_OFFSET: Final = "MAX_OFFSET"
    CONSUME_START_TIME: Final = "CONSUME_START_TIME"
    SHARDING_KEY: Final = "__SHARDINGKEY"
    MSG_REGION: Final = "MSG_REGION"
    TRACE_ON: Final = "TRACE_ON"
    # request-reply (Java MessageConst; set by Producer.request and the reply helper)
    CORRELATION_ID: Final = "CORRELATION_ID"
    REPLY_TO_CLIENT: Final = "REPLY_TO_CLIENT"
    MESSAGE_TTL: Final = "TTL"
    MESSAGE_TYPE: Final = "MSG_TYPE"
    PUSH_REPLY_TIME: Final = "PUSH_REPLY_TIME"
    # added by brokers to stored messages
    CLUSTER: Final = "CLUSTER"
    INNER_MULTI_DISPATCH: Final = "INNER_MULTI_DISPATCH"
    INNER_MULTI_QUEUE_OFFSET: Final = "INNER_MULTI_QUEUE_OFFSET"
    DLQ_ORIGIN_TOPIC: Final = "DLQ_ORIGIN_TOPIC"
    DLQ_ORIGIN_MESSAGE_ID: Final = "DLQ_ORIGIN_MESSAGE_ID"
    TIMER_OUT_MS: Final = "TIMER_OUT_MS"
    TIMER_ENQUEUE_MS: Final = "TIMER_ENQUEUE_MS"
    TIMER_DEQUEUE_MS: Final = "TIMER_DEQUEUE_MS"
    TIMER_ROLL_TIMES: Final = "TIMER_ROLL_TIMES"
    POP_CK: Final = "POP_CK"
    FIRST_POP_TIME: Final = "1ST_POP_TIME"


#: Properties the client manages itself; user properties may not use these names.
RESERVED_PROPERTIES = frozenset(
    v for k, v in vars(Property).items() if k.isupper() and isinstance(v, str)
)


# ---------------------------------------------------------------------------------------------
# properties, hashes, ids


def encode_properties(props: Mapping[str, str]) -> str:
    """``name\\x01value\\x02`` for every pair with a non-empty value."""
    if not props:
        return ""
    return "".join(f"{k}\x01{v}\x02" for k, v in props.items() if v)


def decode_properties(text: str) -> dict[str, str]:
    """Inverse of :func:`encode_properties`, with Java's rules: split on \x02, then at the first
    \x01; segments with an empty name or value are dropped. (A plain partition loop measured
    faster here than a regex scan or map/split over the segments.)"""
    out: dict[str, str] = {}
    for segment in text.split(PROPERTY_SEP):
        name, sep, value = segment.partition(NAME_VALUE_SEP)
        if sep and name and value:
            out[name] = value
    return out


def keys_of(props: Mapping[str, str]) -> list[str]:
    """A stored message's keys: its ``KEYS`` property split on whitespace."""
    raw = props.get(Property.KEYS)
    return raw.split() if raw else []


def user_properties(props: Mapping[str, str]) -> dict[str, str]:
    """A message's properties less the ones the client manages (:data:`RESERVED_PROPERTIES`)."""
    return {k: v for k, v in props.items() if k not in RESERVED_PROPERTIES}


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode()`` (over UTF-16 code units, wrapped to a signed int32)."""
    h = 0
    if text.isascii():
        for ch in text:
            h = (31 * h + ord(ch)) & 0xFFFFFFFF
    else:
        data = text.encode("utf-16-be")
        for (unit,) in struct.iter_unpack(">H", data):
            h = (31 * h + unit) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


_HEX2 = tuple(f"{i:02X}" for i in range(256))

#: the length of every id :class:`UniqueIdGenerator` gives
UNIQ_ID_LENGTH = 32


class UniqueIdGenerator:
    """Client-side message ids (``UNIQ_KEY``): 16 bytes as 32 upper-case hex characters.

    ip(4) + pid low 16 bits(2) + random per process(4) + ms since the start of the month(4) +
    counter(2). The first 10 bytes are fixed per generator and pre-rendered. ``ip`` is this
    host's IPv4 address (the network layer knows it; the sans-IO layer does not look it up).
    """

    def __init__(self, ip: bytes = b"\x7f\x00\x00\x01", pid: int | None = None) -> None:
        prefix = ip[:4].rjust(4, b"\0")
        prefix += struct.pack(">H", (pid if pid is not None else os.getpid()) & 0xFFFF)
        prefix += struct.pack(">I", random.getrandbits(32))
        self._prefix = binascii.hexlify(prefix).decode().upper()
        self._counter = itertools.count(random.getrandbits(16))
        self._month_start_ms = 0
        self._next_month_ms = 0
        self._head_ms = -1  # the millisecond of the last head rendered, and that head
        self._head_text = ""

    def _roll_month(self, now_ms: int) -> None:
        now = datetime.fromtimestamp(now_ms / 1000)
        start = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
        nxt = (
            start.replace(year=start.year + 1, month=1)
            if start.month == 12
            else (start.replace(month=start.month + 1))
        )
        self._month_start_ms = int(start.timestamp() * 1000)
        self._next_month_ms = int(nxt.timestamp() * 1000)

    def _head(self) -> str:
        """The first 28 hex digits: the fixed prefix and the ms since the start of the month."""
        now_ms = time.time_ns() // 1_000_000
        if now_ms == self._head_ms:  # (a busy producer renders each head several times)
            return self._head_text
        if not self._month_start_ms <= now_ms < self._next_month_ms:
            self._roll_month(now_ms)
        elapsed = (now_ms - self._month_start_ms) & 0xFFFFFFFF
        # hex digits by table: cheaper than the ":08X" / ":04X" format specs (measured in
        # commit 2c74ca8)
        head = (
            f"{self._prefix}{_HEX2[elapsed >> 24]}{_HEX2[(elapsed >> 16) & 255]}"
            f"{_HEX2[(elapsed >> 8) & 255]}{_HEX2[elapsed & 255]}"
        )
        self._head_text = head  # (then its millisecond: a reader on another thread never
        self._head_ms = now_ms  # pairs a new millisecond with the old head)
        return head

    def next_id(self) -> str:
        counter = next(self._counter)
        return f"{self._head()}{_HEX2[(counter >> 8) & 255]}{_HEX2[counter & 255]}"

    def next_ids(self, count: int) -> list[str]:
        """``count`` ids at once (one clock reading: a batch's messages share a millisecond)."""
        head = self._head()
        first = next(self._counter)
        if count > 1:  # take the counter values first+1 .. first+count-1 in one step
            self._counter = itertools.count(first + count)
        low = first & 255
        if low + count <= 256:  # one high byte for all: its 30 digits joined to each low byte
            return list(map(f"{head}{_HEX2[(first >> 8) & 255]}".__add__, _HEX2[low : low + count]))
        return [
            f"{head}{_HEX2[(v >> 8) & 255]}{_HEX2[v & 255]}" for v in range(first, first + count)
        ]


def host_addr(ip: bytes, port: int) -> str:
    """``a.b.c.d:port`` or ``[v6]:port`` from a packed address."""
    if len(ip) == 4:
        return f"{ip[0]}.{ip[1]}.{ip[2]}.{ip[3]}:{port}"
    return f"[{ipaddress.IPv6Address(ip)}]:{port}"


def offset_msg_id(host: bytes, port: int, commit_log_offset: int) -> str:
    """The broker's offset message id: store host address + port + commit-log offset, as hex."""
    return (host + struct.pack(">iq", port, commit_log_offset)).hex().upper()


def decode_offset_msg_id(msg_id: str) -> tuple[str, int]:
    """``(host:port, commit-log offset)`` from an offset message id (IPv4 or IPv6 form)."""
    try:
        raw = bytes.fromhex(msg_id)
    except ValueError:
        raise ProtocolError("bad-msg-id", f"{msg_id!r} is not hex") from None
    if len(raw) in (16, 28):
        split = len(raw) - 12
        port, offset = struct.unpack(">iq", raw[split:])
        return host_addr(raw[:split], port), offset
    raise ProtocolError("bad-msg-id", f"offset message id of {len(raw)} bytes")


# ---------------------------------------------------------------------------------------------
# outgoing messages


def _keys(keys: str | Sequence[str]) -> tuple[str, ...]:
    """Java's two setters: ``setKeys(String)`` stores the string as it is (the broker indexes
    each space-separated part), ``setKeys(Collection)`` joins the keys with spaces. Anything
    else (bytes, a number) is kept as one key, for the producer to refuse by name."""
    if isinstance(keys, str):
        return tuple(key for key in keys.split(" ") if key)
    if isinstance(keys, (bytes, bytearray)) or not isinstance(keys, Iterable):
        return (keys,)
    return tuple(keys)


@attrs.define(kw_only=True, slots=True)
class Message:
    """A message to send. ``properties`` are user properties; the well-known ones have their
    own fields: ``keys`` (one key as a string, ``"order-1"``, or several as a list; a string
    with spaces is several keys, as Java's ``setKeys(String)``), ``delay_level`` (1-18, the
    broker's levels 1s .. 2h), and 5.x timer delivery at an absolute time (``deliver_at_ms``)
    or after a delay (``delay_ms``).

    ``value`` is an object for the producer's ``value_serializer`` to turn into the body (as
    aiokafka's ``value_serializer``): give either ``body`` (bytes) or ``value``, not both. The
    body on the wire is always bytes."""

    topic: str
    body: bytes = b""
    tags: str | None = None
    keys: tuple[str, ...] = attrs.field(default=(), converter=_keys)
    properties: Mapping[str, str] = attrs.field(factory=dict)
    delay_level: int = 0
    deliver_at_ms: int | None = None
    delay_ms: int | None = None
    flag: int = 0
    wait_store: bool = True
    value: object = None

    def wire_properties(self) -> dict[str, str]:
        """All properties as sent: user ones plus TAGS, KEYS, DELAY, TIMER_DELIVER_MS, WAIT."""
        props = dict(self.properties)
        if self.tags:
            props[Property.TAGS] = self.tags
        if self.keys:
            props[Property.KEYS] = " ".join(self.keys)
        if self.delay_level > 0:
            props[Property.DELAY] = str(self.delay_level)
        if self.deliver_at_ms is not None:
            props[Property.TIMER_DELIVER_MS] = str(self.deliver_at_ms)
        if self.delay_ms is not None:
            props[Property.TIMER_DELAY_MS] = str(self.delay_ms)
        if not self.wait_store:
            props[Property.WAIT] = "false"
        return props


# one record of a batch body: head, body, properties length, properties (UTF-8)
BATCH_RECORD_HEAD = struct.Struct(">iiiii")  # total, magic 0, crc 0, flag, body length
BATCH_PROPS_LENGTH = struct.Struct(">h")
MAX_BATCH_PROPERTIES = 32767


def encode_batch(items: Iterable[tuple[bytes, int, str | bytes]]) -> bytes:
    """Batch body for SEND_BATCH_MESSAGE from ``(body, flag, encoded properties)`` items (the
    properties as text, or already UTF-8 encoded)."""
    parts: list[bytes] = []
    for body, flag, props_text in items:
        props = props_text if props_text.__class__ is bytes else props_text.encode()  # type: ignore[union-attr]
        if len(props) > MAX_BATCH_PROPERTIES:
            raise ProtocolError("properties-too-long", f"{len(props)} bytes > 32767")
        total = 22 + len(body) + len(props)
        parts.append(BATCH_RECORD_HEAD.pack(total, 0, 0, flag, len(body)))
        parts.append(body)
        parts.append(BATCH_PROPS_LENGTH.pack(len(props)))
        parts.append(props)
    return b"".join(parts)
