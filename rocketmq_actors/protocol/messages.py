"""Messages on the wire: properties, ids, tag hashes, batch bodies and stored-message decoding."""

from __future__ import annotations

import binascii
import ipaddress
import itertools
import os
import random
import struct
import time
import zlib
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime

import attrs

from .errors import ProtocolError

__all__ = [
    "MAX_MESSAGE_SIZE",
    "Message",
    "MessageExt",
    "MessageSysFlag",
    "Property",
    "PullSysFlag",
    "UniqueIdGenerator",
    "decode_messages",
    "decode_offset_msg_id",
    "decode_properties",
    "encode_batch",
    "encode_properties",
    "java_string_hash",
    "offset_msg_id",
]

#: The broker's and Java client's default ``maxMessageSize`` (4 MiB).
MAX_MESSAGE_SIZE = 4 * 1024 * 1024
NAME_VALUE_SEP = "\x01"
PROPERTY_SEP = "\x02"


class MessageSysFlag:
    """Bits of a message's ``sysFlag`` (send header ``f`` and stored records)."""

    COMPRESSED = 0x1
    MULTI_TAGS = 0x2
    TRANSACTION_PREPARED = 0x4
    TRANSACTION_COMMIT = 0x8
    TRANSACTION_ROLLBACK = 0xC
    TRANSACTION_MASK = 0xC
    BORNHOST_V6 = 0x10
    STOREHOST_V6 = 0x20
    NEED_UNWRAP = 0x40
    INNER_BATCH = 0x80
    COMPRESSION_MASK = 0x700
    COMPRESSION_LZ4 = 0x100
    COMPRESSION_ZSTD = 0x200
    COMPRESSION_ZLIB = 0x300


class PullSysFlag:
    """Bits of PULL_MESSAGE's ``sysFlag``."""

    COMMIT_OFFSET = 0x1
    SUSPEND = 0x2
    SUBSCRIPTION = 0x4
    CLASS_FILTER = 0x8
    LITE_PULL = 0x10

    @staticmethod
    def build(*, commit_offset: bool, suspend: bool, subscription: bool) -> int:
        return (
            (PullSysFlag.COMMIT_OFFSET if commit_offset else 0)
            | (PullSysFlag.SUSPEND if suspend else 0)
            | (PullSysFlag.SUBSCRIPTION if subscription else 0)
        )


class Property:
    """Well-known message property names."""

    TAGS = "TAGS"
    KEYS = "KEYS"
    WAIT = "WAIT"
    DELAY = "DELAY"
    TIMER_DELIVER_MS = "TIMER_DELIVER_MS"
    TIMER_DELAY_SEC = "TIMER_DELAY_SEC"
    TIMER_DELAY_MS = "TIMER_DELAY_MS"
    UNIQ_KEY = "UNIQ_KEY"
    TRAN_MSG = "TRAN_MSG"
    PGROUP = "PGROUP"
    CHECK_IMMUNITY_TIME_IN_SECONDS = "CHECK_IMMUNITY_TIME_IN_SECONDS"
    TRANSACTION_ID = "__transactionId__"
    RETRY_TOPIC = "RETRY_TOPIC"
    REAL_TOPIC = "REAL_TOPIC"
    REAL_QID = "REAL_QID"
    RECONSUME_TIME = "RECONSUME_TIME"
    MAX_RECONSUME_TIMES = "MAX_RECONSUME_TIMES"
    ORIGIN_MESSAGE_ID = "ORIGIN_MESSAGE_ID"
    MIN_OFFSET = "MIN_OFFSET"
    MAX_OFFSET = "MAX_OFFSET"
    CONSUME_START_TIME = "CONSUME_START_TIME"
    SHARDING_KEY = "__SHARDINGKEY"
    MSG_REGION = "MSG_REGION"
    TRACE_ON = "TRACE_ON"


#: Properties the client manages itself; user properties may not use these names.
RESERVED_PROPERTIES = frozenset(
    v for k, v in vars(Property).items() if k.isupper() and isinstance(v, str)
)


# ---------------------------------------------------------------------------------------------
# properties, hashes, ids


def encode_properties(props: Mapping[str, str]) -> str:
    """``name\\x01value\\x02`` for every pair with a non-empty value."""
    return "".join(f"{k}\x01{v}\x02" for k, v in props.items() if v)


def decode_properties(text: str) -> dict[str, str]:
    """Inverse of :func:`encode_properties`; segments without a name or value are dropped."""
    out: dict[str, str] = {}
    for segment in text.split(PROPERTY_SEP):
        name, sep, value = segment.partition(NAME_VALUE_SEP)
        if sep and name and value:
            out[name] = value
    return out


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

    def next_id(self) -> str:
        now_ms = time.time_ns() // 1_000_000
        if not self._month_start_ms <= now_ms < self._next_month_ms:
            self._roll_month(now_ms)
        elapsed = (now_ms - self._month_start_ms) & 0xFFFFFFFF
        return f"{self._prefix}{elapsed:08X}{next(self._counter) & 0xFFFF:04X}"


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
        return _addr(raw[:split], port), offset
    raise ProtocolError("bad-msg-id", f"offset message id of {len(raw)} bytes")


# ---------------------------------------------------------------------------------------------
# outgoing messages


@attrs.define(kw_only=True, slots=True)
class Message:
    """A message to send. ``properties`` are user properties; the well-known ones (tags, keys,
    delay, timer delivery) have their own fields."""

    topic: str
    body: bytes
    tags: str | None = None
    keys: Sequence[str] = ()
    properties: Mapping[str, str] = attrs.field(factory=dict)
    delay_level: int = 0
    deliver_at_ms: int | None = None
    flag: int = 0
    wait_store: bool = True

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
        if not self.wait_store:
            props[Property.WAIT] = "false"
        return props


_I16 = struct.Struct(">h")
_BATCH_HEAD = struct.Struct(">iiiii")  # total, magic 0, crc 0, flag, body length


def encode_batch(items: Iterable[tuple[bytes, int, str]]) -> bytes:
    """Batch body for SEND_BATCH_MESSAGE from ``(body, flag, encoded properties)`` items."""
    parts: list[bytes] = []
    for body, flag, props_text in items:
        props = props_text.encode()
        if len(props) > 32767:
            raise ProtocolError("properties-too-long", f"{len(props)} bytes > 32767")
        total = 22 + len(body) + len(props)
        parts.append(_BATCH_HEAD.pack(total, 0, 0, flag, len(body)))
        parts.append(body)
        parts.append(_I16.pack(len(props)))
        parts.append(props)
    return b"".join(parts)


# ---------------------------------------------------------------------------------------------
# stored messages (pull, view, query, check-transaction bodies)

MAGIC_V1 = -626843481  # 0xDAA320A7 as int32: 1-byte topic length
MAGIC_V2 = -626843477  # 0xDAA320AB as int32: 2-byte topic length
MAGIC_BLANK = -875286124  # 0xCBD43194: end-of-file filler, never valid in a reply

# total, magic, crc, queue id, flag, queue offset, physical offset, sys flag, born ts
_HEAD = struct.Struct(">iiiiiqqiq")
# born ip, born port, store ts, store ip, store port, reconsume times, prepared offset, body len
_V4_HOSTS = struct.Struct(">4siq4siiqi")
_I32 = struct.Struct(">i")


@attrs.define(slots=True, kw_only=True)
class MessageExt:
    """A message as stored by the broker and returned by pull / view / query / check."""

    topic: str
    body: bytes
    properties: dict[str, str]
    queue_id: int
    queue_offset: int
    commit_log_offset: int
    sys_flag: int
    flag: int
    born_timestamp: int
    born_host: str
    store_timestamp: int
    store_host: str
    reconsume_times: int
    prepared_transaction_offset: int
    body_crc: int
    offset_msg_id: str
    broker_name: str = ""

    @property
    def msg_id(self) -> str:
        """The user-visible id: ``UNIQ_KEY`` if set, else the offset message id."""
        return self.properties.get(Property.UNIQ_KEY) or self.offset_msg_id

    @property
    def tags(self) -> str | None:
        return self.properties.get(Property.TAGS)

    @property
    def keys(self) -> list[str]:
        raw = self.properties.get(Property.KEYS)
        return raw.split() if raw else []

    @property
    def transaction_id(self) -> str | None:
        if self.properties.get(Property.TRAN_MSG) == "true":
            return self.properties.get(Property.UNIQ_KEY)
        return None


def _addr(ip: bytes, port: int) -> str:
    if len(ip) == 4:
        return f"{ip[0]}.{ip[1]}.{ip[2]}.{ip[3]}:{port}"
    return f"[{ipaddress.IPv6Address(ip)}]:{port}"


def _decompress(body: bytes, sys_flag: int) -> bytes:
    kind = sys_flag & MessageSysFlag.COMPRESSION_MASK
    if kind in (0, MessageSysFlag.COMPRESSION_ZLIB):
        try:
            return zlib.decompress(body)
        except zlib.error as exc:
            raise ProtocolError("bad-compressed-body", str(exc)) from None
    name = "LZ4" if kind == MessageSysFlag.COMPRESSION_LZ4 else "ZSTD"
    raise ProtocolError("unsupported-compression", f"{name}-compressed bodies are not supported")


_UNWRAP = MessageSysFlag.INNER_BATCH | MessageSysFlag.NEED_UNWRAP
_BATCH_RECORD = struct.Struct(">iiiii")


def _unwrap_inner_batch(outer: MessageExt) -> list[MessageExt]:
    """Expand a broker-side inner batch: inner *i* gets the outer queue offset + *i*."""
    data = outer.body
    view = memoryview(data)
    out: list[MessageExt] = []
    pos = 0
    while pos < len(data):
        if len(data) - pos < 22:
            raise ProtocolError("truncated-message", "inner batch record too short")
        total, _magic, _crc, flag, body_len = _BATCH_RECORD.unpack_from(view, pos)
        end = pos + total
        if total < 22 or end > len(data) or body_len < 0 or 20 + body_len + 2 > total:
            raise ProtocolError("bad-message-size", f"inner batch record size {total}")
        body = data[pos + 20 : pos + 20 + body_len]
        (props_len,) = _I16.unpack_from(view, pos + 20 + body_len)
        p = pos + 22 + body_len
        if props_len < 0 or p + props_len > end:
            raise ProtocolError("bad-message-size", f"inner properties length {props_len}")
        props = decode_properties(str(view[p : p + props_len], "utf-8"))
        out.append(
            attrs.evolve(
                outer,
                body=body,
                flag=flag,
                properties=props,
                queue_offset=outer.queue_offset + len(out),
                sys_flag=outer.sys_flag & ~_UNWRAP,
            )
        )
        pos = end
    return out


def decode_messages(data: bytes, *, decompress: bool = True) -> list[MessageExt]:
    """Decode a concatenation of stored-message records.

    Each record is checked against its own TOTALSIZE; any inconsistency raises
    :class:`ProtocolError`. Compressed bodies are inflated (and the compressed bit cleared) when
    ``decompress`` is true.
    """
    view = memoryview(data)
    size = len(data)
    out: list[MessageExt] = []
    pos = 0
    try:
        while pos < size:
            if size - pos < 48:
                raise ProtocolError("truncated-message", f"{size - pos} trailing bytes")
            (total, magic, crc, queue_id, flag, queue_offset, phys_offset, sys_flag, born_ts) = (
                _HEAD.unpack_from(view, pos)
            )
            end = pos + total
            if total < 48 or end > size:
                raise ProtocolError("bad-message-size", f"record size {total} at offset {pos}")
            p = pos + 48
            if not sys_flag & (MessageSysFlag.BORNHOST_V6 | MessageSysFlag.STOREHOST_V6):
                if p + 40 > end:
                    raise ProtocolError("truncated-message", "record shorter than its hosts")
                (b_ip, b_port, store_ts, s_ip, s_port, reconsume, prepared, body_len) = (
                    _V4_HOSTS.unpack_from(view, p)
                )
                p += 40
            else:
                b_len = 16 if sys_flag & MessageSysFlag.BORNHOST_V6 else 4
                s_len = 16 if sys_flag & MessageSysFlag.STOREHOST_V6 else 4
                need = b_len + 4 + 8 + s_len + 4 + 4 + 8 + 4
                if p + need > end:
                    raise ProtocolError("truncated-message", "record shorter than its hosts")
                b_ip = bytes(view[p : p + b_len])
                (b_port,) = _I32.unpack_from(view, p + b_len)
                p += b_len + 4
                (store_ts,) = struct.unpack_from(">q", view, p)
                p += 8
                s_ip = bytes(view[p : p + s_len])
                (s_port, reconsume, prepared, body_len) = struct.unpack_from(
                    ">iiqi", view, p + s_len
                )
                p += s_len + 20
            if body_len < 0 or p + body_len > end:
                raise ProtocolError("bad-message-size", f"body length {body_len}")
            body = data[p : p + body_len]
            p += body_len
            if magic == MAGIC_V2:
                if p + 2 > end:
                    raise ProtocolError("truncated-message", "missing topic length")
                (topic_len,) = _I16.unpack_from(view, p)
                p += 2
            elif magic == MAGIC_V1:
                if p + 1 > end:
                    raise ProtocolError("truncated-message", "missing topic length")
                topic_len = data[p]
                p += 1
            else:
                raise ProtocolError("bad-magic", f"magic code {magic & 0xFFFFFFFF:#x}")
            if topic_len < 0 or p + topic_len + 2 > end:
                raise ProtocolError("bad-message-size", f"topic length {topic_len}")
            topic = str(view[p : p + topic_len], "utf-8")
            p += topic_len
            (props_len,) = _I16.unpack_from(view, p)
            p += 2
            if props_len < 0 or p + props_len > end:
                raise ProtocolError("bad-message-size", f"properties length {props_len}")
            props = decode_properties(str(view[p : p + props_len], "utf-8")) if props_len else {}
            if decompress and sys_flag & MessageSysFlag.COMPRESSED:
                body = _decompress(body, sys_flag)
                sys_flag &= ~(MessageSysFlag.COMPRESSED | MessageSysFlag.COMPRESSION_MASK)
            msg = MessageExt(
                topic=topic,
                body=body,
                properties=props,
                queue_id=queue_id,
                queue_offset=queue_offset,
                commit_log_offset=phys_offset,
                sys_flag=sys_flag,
                flag=flag,
                born_timestamp=born_ts,
                born_host=_addr(b_ip, b_port),
                store_timestamp=store_ts,
                store_host=_addr(s_ip, s_port),
                reconsume_times=reconsume,
                prepared_transaction_offset=prepared,
                body_crc=crc,
                offset_msg_id=offset_msg_id(s_ip, s_port, phys_offset),
            )
            if sys_flag & _UNWRAP == _UNWRAP:
                out.extend(_unwrap_inner_batch(msg))
            else:
                out.append(msg)
            pos = end
    except UnicodeDecodeError as exc:
        raise ProtocolError("bad-utf8", str(exc)) from None
    except struct.error as exc:  # defensive: every read above is bounds-checked
        raise ProtocolError("truncated-message", str(exc)) from None
    return out
