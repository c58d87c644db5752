"""The two forms of a RocketMQ message id, told apart and decoded.

* The **offset message id** (the broker's; ``SendResult.offsetMsgId``, ``MessageExt.msgId``
  of a stored record without UNIQ_KEY): store host address (4 bytes IPv4 or 16 bytes IPv6),
  port (int32) and commit-log offset (int64), as upper-case hex - 32 or 56 characters.
  Java: ``MessageDecoder.createMessageId`` / ``decodeMessageId``.
* The **unique key** (the client's; the ``UNIQ_KEY`` property, ``SendResult.msgId``): client
  IP (4 or 16 bytes), pid (low 16 bits), a per-process int32 (Java: the class loader's hash
  code), milliseconds since the start of the month (int32) and a counter (int16) - also 32
  or 56 characters. Java: ``MessageClientIDSetter`` (``createUniqID``, ``getIPStrFromID``,
  ``getNearlyTimeFromID``).

Both forms have the same lengths, so which one a string is is a guess from its content, as
Java's tools make it (``DefaultMQAdminExtImpl.viewMessage`` tries the offset form first and
falls back to a unique-key query): the 4 bytes after the address are a port for an offset id
(the top 2 bytes zero) and pid + hash for a unique key; the 8 bytes after them are a
commit-log offset for an offset id (the top 2 bytes zero below 256 TiB of commit log) and
hash + time + counter for a unique key. Both checks pass for a unique key only when its pid's
low 16 bits and the hash's low 16 bits are all zero.
"""

from __future__ import annotations

import struct
from datetime import datetime
from typing import Literal

import attrs

from .errors import ProtocolError
from .messages import host_addr

__all__ = ["MessageIdInfo", "decode_message_id", "month_start_ms"]

_TAIL = struct.Struct(">iq")  # port, commit-log offset
# pid, class-loader hash, ms since month start, counter; the ms are read unsigned, as Java's
# getNearlyTimeFromID does (put after 4 zero bytes, read as a long): late in a month they
# pass 2**31 (createUniqIDBuffer stores them with an int cast)
_UNIQ_TAIL = struct.Struct(">HiIH")


@attrs.frozen(kw_only=True)
class MessageIdInfo:
    """What a message id holds. ``kind`` is ``"offset"`` or ``"unique"``; the fields of the
    other kind are None. The kind is a guess (see the module docstring): a caller that
    finds nothing at an offset id's address may still try it as a unique key, as Java's
    tools do."""

    msg_id: str
    kind: Literal["offset", "unique"]
    #: offset id: the store host ``ip:port`` (``[v6]:port``) and commit-log offset
    store_host: str | None = None
    commit_log_offset: int | None = None
    #: unique key: the client's IP (no port), pid low 16 bits, class-loader hash (signed),
    #: milliseconds since the start of the (client's local) month, counter
    client_ip: str | None = None
    pid: int | None = None
    class_loader_hash: int | None = None
    month_offset_ms: int | None = None
    counter: int | None = None

    def born_time_ms(self, now_ms: int) -> int | None:
        """The unique key's creation time in epoch ms, read as Java's ``getNearlyTimeFromID``
        does: this month's start (local time) plus the offset, or last month's when that lies
        after ``now_ms``. None for an offset id."""
        if self.month_offset_ms is None:
            return None
        start = month_start_ms(now_ms)
        if start + self.month_offset_ms >= now_ms:
            start = month_start_ms(start - 1)  # the month before
        return start + self.month_offset_ms


def month_start_ms(epoch_ms: int) -> int:
    """Local midnight of the first day of ``epoch_ms``'s month (Java's Calendar default zone)."""
    at = datetime.fromtimestamp(epoch_ms / 1000)
    first = at.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    return int(first.timestamp() * 1000)


def _ip(raw: bytes) -> str:
    return host_addr(raw, 0).rsplit(":", 1)[0].strip("[]")


def _looks_like_offset(raw: bytes, split: int) -> bool:
    port: int
    offset: int
    port, offset = _TAIL.unpack_from(raw, split)
    return 0 < port <= 0xFFFF and 0 <= offset < (1 << 48)


def decode_message_id(msg_id: object) -> MessageIdInfo:
    """Decode ``msg_id`` (either form, case-insensitive hex; see the module docstring for
    how the form is chosen). :class:`ProtocolError` ``bad-msg-id`` for anything else."""
    if not isinstance(msg_id, str):
        raise ProtocolError("bad-msg-id", f"a message id is a string, not {type(msg_id).__name__}")
    text = msg_id.strip()
    try:
        raw = bytes.fromhex(text)
    except ValueError:
        raise ProtocolError("bad-msg-id", f"{msg_id!r} is not hex") from None
    if len(raw) not in (16, 28):
        raise ProtocolError(
            "bad-msg-id", f"{msg_id!r}: {len(text)} hex digits, a message id has 32 or 56"
        )
    split = len(raw) - 12  # the address: 4 bytes (IPv4) or 16 (IPv6), in both forms
    text = text.upper()
    if _looks_like_offset(raw, split):
        port, offset = _TAIL.unpack_from(raw, split)
        return MessageIdInfo(
            msg_id=text, kind="offset", store_host=host_addr(raw[:split], port),
            commit_log_offset=offset,
        )  # fmt: skip
    pid, hash_code, month_ms, counter = _UNIQ_TAIL.unpack_from(raw, split)
    return MessageIdInfo(
        msg_id=text, kind="unique", client_ip=_ip(raw[:split]), pid=pid,
        class_loader_hash=hash_code, month_offset_ms=month_ms, counter=counter,
    )  # fmt: skip
