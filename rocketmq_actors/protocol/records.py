"""Stored-message records: the bodies of pull, view, query and check-transaction replies.

Layout per record (big-endian): TOTALSIZE, MAGICCODE, BODYCRC, QUEUEID, FLAG, QUEUEOFFSET,
PHYSICALOFFSET, SYSFLAG, BORNTIMESTAMP, BORNHOST (4 or 16 bytes + port), STORETIMESTAMP,
STOREHOST, RECONSUMETIMES, PREPARED_TRANSACTION_OFFSET, body length + body, topic length
(1 byte for magic V1, 2 for V2) + topic, properties length (int16) + properties.

This is the consumer's hot path. The IPv4 fixed part is read with a single ``struct`` call;
what consumers may never read (properties, host strings, the offset message id) is kept raw
and computed on first access.
"""

from __future__ import annotations

import struct
from typing import Generic, TypeVar

import attrs

from . import compression
from .errors import ProtocolError
from .messages import (
    MAX_MESSAGE_SIZE,
    MessageSysFlag,
    Property,
    decode_properties,
    host_addr,
    keys_of,
    offset_msg_id,
)

__all__ = [
    "MAGIC_V1",
    "MAGIC_V2",
    "CompressedRecord",
    "InflationDeferred",
    "MessageExt",
    "decode_messages",
    "decode_records",
]

MAGIC_V1 = -626843481  # 0xDAA320A7 as int32: 1-byte topic length
MAGIC_V2 = -626843477  # 0xDAA320AB as int32: 2-byte topic length

_V6_BITS = MessageSysFlag.BORNHOST_V6 | MessageSysFlag.STOREHOST_V6
_UNWRAP = MessageSysFlag.INNER_BATCH | MessageSysFlag.NEED_UNWRAP

# total, magic, crc, queue id, flag, queue offset, physical offset, sys flag, born timestamp
_HEAD = struct.Struct(">iiiiiqqiq")
# the whole fixed part when both hosts are IPv4 (88 bytes, up to and including body length)
_FIXED_V4 = struct.Struct(">iiiiiqqiq4siq4siiqi")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_TAIL = struct.Struct(">iiqi")  # store port, reconsume times, prepared offset, body length
_BATCH_RECORD = struct.Struct(">iiiii")


@attrs.define(slots=True, eq=True)
class MessageExt:
    """A message as stored by the broker. Fields are in wire order; construct by keyword.

    ``properties`` is parsed from ``raw_properties`` on first access and cached; the dict may be
    modified. A consumer's pull records the queue's offsets at that pull
    (:meth:`set_pull_offsets`), which appear as the MIN_OFFSET and MAX_OFFSET properties, as
    the Java client's ``PullAPIWrapper`` adds them.
    """

    topic: str
    body: bytes
    raw_properties: bytes
    queue_id: int
    queue_offset: int
    commit_log_offset: int
    sys_flag: int
    flag: int
    born_timestamp: int
    born_ip: bytes
    born_port: int
    store_timestamp: int
    store_ip: bytes
    store_port: int
    reconsume_times: int
    prepared_transaction_offset: int
    body_crc: int
    broker_name: str = ""
    #: why the record could not be fully decoded (an unsupported compression, a corrupt body,
    #: properties that are not UTF-8), when it was decoded with ``strict=False``; the body is
    #: then as stored. Consumers treat such a message as poison (see the consumer docs).
    decode_error: str | None = attrs.field(default=None, eq=False)
    _properties: dict[str, str] | None = attrs.field(default=None, init=False, eq=False, repr=False)
    _pull_offsets: tuple[int, int] | None = attrs.field(
        default=None, init=False, eq=False, repr=False
    )

    def set_pull_offsets(self, offsets: tuple[int, int]) -> None:
        """The queue's (min, max) offsets when this message was pulled (properties
        MIN_OFFSET and MAX_OFFSET; set lazily, the hot path does not parse properties; one
        tuple serves every message of a pull)."""
        self._pull_offsets = offsets
        if self._properties is not None:
            self._add_pull_offsets(self._properties)

    def _add_pull_offsets(self, props: dict[str, str]) -> None:
        if self._pull_offsets is not None:
            props[Property.MIN_OFFSET] = str(self._pull_offsets[0])
            props[Property.MAX_OFFSET] = str(self._pull_offsets[1])

    @property
    def properties(self) -> dict[str, str]:
        """The message's properties (decoded on first use)."""
        props = self._properties
        if props is None:
            try:
                text = self.raw_properties.decode()
            except UnicodeDecodeError as exc:  # readable, but marked: never raised from here
                self.decode_error = self.decode_error or f"bad-utf8: message properties: {exc}"
                text = self.raw_properties.decode(errors="replace")
            props = decode_properties(text)
            self._add_pull_offsets(props)
            self._properties = props
        return props

    @property
    def born_host(self) -> str:
        """The sending client's address (``host:port``)."""
        return host_addr(self.born_ip, self.born_port)

    @property
    def store_host(self) -> str:
        """The address of the broker that stored it (``host:port``)."""
        return host_addr(self.store_ip, self.store_port)

    @property
    def offset_msg_id(self) -> str:
        """The broker's id for this record: store host + commit-log offset."""
        return offset_msg_id(self.store_ip, self.store_port, self.commit_log_offset)

    @property
    def msg_id(self) -> str:
        """The user-visible id: ``UNIQ_KEY`` if set, else the offset message id."""
        return self.properties.get(Property.UNIQ_KEY) or self.offset_msg_id

    @property
    def tags(self) -> str | None:
        """The message's tag (None: none)."""
        return self.properties.get(Property.TAGS)

    @property
    def keys(self) -> list[str]:
        """The message's keys (what ``query`` finds it by)."""
        return keys_of(self.properties)

    @property
    def transaction_id(self) -> str | None:
        """A transactional message's id (None for any other)."""
        if self.properties.get(Property.TRAN_MSG) == "true":
            return self.properties.get(Property.UNIQ_KEY)
        return None


M = TypeVar("M", bound=MessageExt)

_HostsV6 = tuple[bytes, int, int, bytes, int, int, int, int, int]


def _read_hosts_v6(data: bytes, p: int, end: int, sys_flag: int) -> _HostsV6:
    """Slow path: at least one host is IPv6. Returns the fields after BORNTIMESTAMP."""
    b_len = 16 if sys_flag & MessageSysFlag.BORNHOST_V6 else 4
    s_len = 16 if sys_flag & MessageSysFlag.STOREHOST_V6 else 4
    if p + b_len + 4 + 8 + s_len + 20 > end:
        raise ProtocolError("truncated-message", "record shorter than its hosts")
    b_ip = data[p : p + b_len]
    (b_port,) = _I32.unpack_from(data, p + b_len)
    p += b_len + 4
    (store_ts,) = _I64.unpack_from(data, p)
    p += 8
    s_ip = data[p : p + s_len]
    s_port, reconsume, prepared, body_len = _TAIL.unpack_from(data, p + s_len)
    return b_ip, b_port, store_ts, s_ip, s_port, reconsume, prepared, body_len, p + s_len + 20


class CompressedRecord(Exception):
    """Raised by :func:`decode_records` with ``defer_compressed`` at the first compressed
    record: the caller decodes the records again where inflating may take long."""


class InflationDeferred(Exception, Generic[M]):
    """Raised by :func:`decode_records` when a compressed record would inflate past what is
    left of its ``inflate_budget``: ``records`` were decoded before it, and ``queue_offset``
    is its offset, where the caller reads again once there is room."""

    def __init__(self, records: list[M], queue_offset: int) -> None:
        super().__init__(queue_offset)
        self.records = records
        self.queue_offset = queue_offset


def decode_messages(
    data: bytes, *, decompress: bool = True, strict: bool = True
) -> list[MessageExt]:
    """Decode a concatenation of stored-message records (see :func:`decode_records`)."""
    return decode_records(data, MessageExt, decompress=decompress, strict=strict)


def decode_records(
    data: bytes, record: type[M], *, decompress: bool = True, strict: bool = True,
    max_body: int = MAX_MESSAGE_SIZE, defer_compressed: bool = False,
    inflate_budget: int | None = None,
) -> list[M]:  # fmt: skip
    """Decode a concatenation of stored-message records, each an instance of ``record`` (a
    subclass of :class:`MessageExt` whose own fields have defaults: a consumer's message).
    A compressed body that would inflate past ``max_body`` bytes does not decode.

    Each record is checked against its own TOTALSIZE; a record that breaks the framing (sizes,
    magic code) raises :class:`ProtocolError` (and nothing else). Compressed bodies are
    inflated, and the compression bits cleared, when ``decompress`` is true; inner batches are
    expanded. A record whose framing holds but whose content does not decode (an unsupported
    compression, a corrupt body, a topic that is not UTF-8, a broken inner batch) raises too when
    ``strict``; otherwise it is returned as stored, with ``decode_error`` saying why, and the
    records after it are decoded as usual (a consumer's pull: one poison message must not hide
    the others). With ``defer_compressed``, a compressed record (to be inflated) raises
    :class:`CompressedRecord` instead: a caller on an event loop decodes those elsewhere.
    With ``inflate_budget``, the bytes the bodies inflated in this call may hold in all (a
    consumer's room in its cache): a compressed record after the first decoded one inflates to
    at most what is left of it, and one that would need more raises
    :class:`InflationDeferred` with the records before it, so nothing is allocated past the
    budget but the first record's ``max_body``.
    """
    data = bytes(data)
    size = len(data)
    out: list[M] = []
    append = out.append
    pos = 0
    try:
        while pos < size:
            if size - pos < 88:
                raise ProtocolError("truncated-message", f"{size - pos} trailing bytes")
            (total, magic, crc, queue_id, flag, queue_offset, phys, sys_flag, born_ts,
             b_ip, b_port, store_ts, s_ip, s_port, reconsume, prepared, body_len) = (
                _FIXED_V4.unpack_from(data, pos)
            )  # fmt: skip
            end = pos + total
            if total < 88 or end > size:
                raise ProtocolError("bad-message-size", f"record size {total} at offset {pos}")
            if sys_flag & _V6_BITS:
                (b_ip, b_port, store_ts, s_ip, s_port, reconsume, prepared, body_len, p) = (
                    _read_hosts_v6(data, pos + 48, end, sys_flag)
                )  # fmt: skip
            else:
                p = pos + 88
            p_body = p
            p += body_len
            if body_len < 0 or p > end:
                raise ProtocolError("bad-message-size", f"body length {body_len}")
            if magic == MAGIC_V1:
                if p >= end:
                    raise ProtocolError("truncated-message", "missing topic length")
                topic_len = data[p]
                p += 1
            elif magic == MAGIC_V2:
                if p + 2 > end:
                    raise ProtocolError("truncated-message", "missing topic length")
                (topic_len,) = _I16.unpack_from(data, p)
                p += 2
            else:
                raise ProtocolError("bad-magic", f"magic code {magic & 0xFFFFFFFF:#x}")
            p_topic = p
            p += topic_len
            if topic_len < 0 or p + 2 > end:
                raise ProtocolError("bad-message-size", f"topic length {topic_len}")
            (props_len,) = _I16.unpack_from(data, p)
            p += 2
            if props_len < 0 or p + props_len > end:
                raise ProtocolError("bad-message-size", f"properties length {props_len}")
            body = data[p_body : p_body + body_len]
            error: str | None = None
            if decompress and sys_flag & MessageSysFlag.COMPRESSED:
                if defer_compressed:
                    raise CompressedRecord
                limit = max_body
                if inflate_budget is not None and out:  # (the first always may: progress)
                    limit = min(max_body, max(inflate_budget, 0))
                try:
                    body = compression.decompress(body, sys_flag, limit)
                    sys_flag &= ~(MessageSysFlag.COMPRESSED | MessageSysFlag.COMPRESSION_MASK)
                except ProtocolError as exc:
                    if limit < max_body:  # (past the budget, or corrupt: the next call,
                        raise InflationDeferred(out, queue_offset) from None  # first, tells)
                    if strict:
                        raise
                    error = str(exc)
                if inflate_budget is not None:
                    inflate_budget -= len(body)
            raw_topic = data[p_topic : p_topic + topic_len]
            try:
                topic = raw_topic.decode()
            except UnicodeDecodeError as exc:
                if strict:
                    raise
                topic, error = raw_topic.decode(errors="replace"), error or f"bad-utf8: {exc}"
            msg = record(
                topic,
                body,
                data[p : p + props_len],
                queue_id,
                queue_offset,
                phys,
                sys_flag,
                flag,
                born_ts,
                b_ip,
                b_port,
                store_ts,
                s_ip,
                s_port,
                reconsume,
                prepared,
                crc,
            )
            if error is not None:
                msg.decode_error = error
                append(msg)
            elif sys_flag & _UNWRAP == _UNWRAP:
                try:
                    out.extend(_unwrap_inner_batch(msg))
                except ProtocolError as exc:
                    if strict:
                        raise
                    msg.decode_error = str(exc)
                    append(msg)
            else:
                append(msg)
            pos = end
    except UnicodeDecodeError as exc:
        raise ProtocolError("bad-utf8", str(exc)) from None
    except struct.error as exc:  # defensive: every read above is bounds-checked
        raise ProtocolError("truncated-message", str(exc)) from None
    return out


def _unwrap_inner_batch(outer: M) -> list[M]:
    """Expand a broker-side inner batch: inner *i* gets the outer queue offset + *i*."""
    data = outer.body
    out: list[M] = []
    pos = 0
    while pos < len(data):
        if len(data) - pos < 22:
            raise ProtocolError("truncated-message", "inner batch record too short")
        total, _magic, _crc, flag, body_len = _BATCH_RECORD.unpack_from(data, pos)
        end = pos + total
        if total < 22 or end > len(data) or body_len < 0 or 20 + body_len + 2 > total:
            raise ProtocolError("bad-message-size", f"inner batch record size {total}")
        body = data[pos + 20 : pos + 20 + body_len]
        (props_len,) = _I16.unpack_from(data, pos + 20 + body_len)
        p = pos + 22 + body_len
        if props_len < 0 or p + props_len > end:
            raise ProtocolError("bad-message-size", f"inner properties length {props_len}")
        out.append(
            attrs.evolve(
                outer,
                body=body,
                flag=flag,
                raw_properties=data[p : p + props_len],
                queue_offset=outer.queue_offset + len(out),
                sys_flag=outer.sys_flag & ~_UNWRAP,
            )
        )
        pos = end
    return out
