"""Stored-message records as columns, for readers that turn records into rows.

:func:`~rocketmq_actors.protocol.records.decode_messages` builds one
:class:`~rocketmq_actors.protocol.records.MessageExt` per record; a reader that only copies
fields into columns (the Spark source's Arrow record batches) pays for every object and then
reads it back field by field. :func:`decode_columns` appends each common record's fields to
the lists of a :class:`RecordColumns` instead: IPv4 hosts, a body that is not compressed, no
inner batch. Any other record is decoded by ``decode_messages`` (which decompresses, expands
inner batches and marks what does not decode), and so is the rest of a body whose framing
breaks; :meth:`RecordColumns.add_messages` takes those messages as they are. The columns are
the same either way (a test holds the two paths equal).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from itertools import chain

import attrs

from .messages import MessageSysFlag, offset_msg_id
from .records import _FIXED_V4, _I16, MAGIC_V1, MAGIC_V2, MessageExt, decode_messages

__all__ = ["RecordColumns", "decode_columns"]

# what decode_columns leaves to decode_messages
_NOT_PLAIN = (
    MessageSysFlag.BORNHOST_V6
    | MessageSysFlag.STOREHOST_V6
    | MessageSysFlag.COMPRESSED
    | MessageSysFlag.NEED_UNWRAP
)


@attrs.define
class RecordColumns:
    """What a row reader keeps of each record, one list per field, in record order."""

    queue_ids: list[int] = attrs.Factory(list)
    queue_offsets: list[int] = attrs.Factory(list)
    raw_properties: list[bytes] = attrs.Factory(list)
    bodies: list[bytes] = attrs.Factory(list)
    born_timestamps: list[int] = attrs.Factory(list)  # ms
    store_timestamps: list[int] = attrs.Factory(list)  # ms
    reconsume_times: list[int] = attrs.Factory(list)
    # for the offset message id of a record without UNIQ_KEY
    store_ips: list[bytes] = attrs.Factory(list)
    store_ports: list[int] = attrs.Factory(list)
    commit_log_offsets: list[int] = attrs.Factory(list)

    def __len__(self) -> int:
        return len(self.queue_offsets)

    def _lists(self) -> tuple[list[object], ...]:
        return attrs.astuple(self, recurse=False)

    @classmethod
    def joined(cls, parts: Sequence[RecordColumns]) -> RecordColumns:
        """The rows of ``parts``, one after another, each column built in one pass; a single
        part is returned itself (not a copy)."""
        if len(parts) == 1:
            return parts[0]
        columns = zip(*(part._lists() for part in parts), strict=True)
        return cls(*(list(chain.from_iterable(column)) for column in columns))

    def truncate(self, rows: int) -> None:
        """Keep the first ``rows`` rows."""
        for column in self._lists():
            del column[rows:]

    def add_messages(self, messages: Iterable[MessageExt]) -> None:
        """Append decoded messages (the records :func:`decode_columns` leaves)."""
        for m in messages:
            self.queue_ids.append(m.queue_id)
            self.queue_offsets.append(m.queue_offset)
            self.raw_properties.append(m.raw_properties)
            self.bodies.append(m.body)
            self.born_timestamps.append(m.born_timestamp)
            self.store_timestamps.append(m.store_timestamp)
            self.reconsume_times.append(m.reconsume_times)
            self.store_ips.append(m.store_ip)
            self.store_ports.append(m.store_port)
            self.commit_log_offsets.append(m.commit_log_offset)

    def offset_msg_id(self, row: int) -> str:
        """The broker's id of ``row``'s record (store host and commit-log offset)."""
        return offset_msg_id(
            self.store_ips[row], self.store_ports[row], self.commit_log_offsets[row]
        )


def decode_columns(data: bytes) -> RecordColumns:
    """The records of ``data`` (a pull body) as columns: a plain record (see the module
    docstring) straight from the bytes, any other through ``decode_messages`` (its own bytes
    alone: the plain ones around it keep the fast way), and from broken framing on, the rest
    of the body through ``decode_messages``, which marks what does not decode."""
    into = RecordColumns()
    fixed, i16 = _FIXED_V4.unpack_from, _I16.unpack_from
    size = len(data)
    qids, qoffs, props, bodies = (
        into.queue_ids,
        into.queue_offsets,
        into.raw_properties,
        into.bodies,
    )
    born, stored, reconsumes = into.born_timestamps, into.store_timestamps, into.reconsume_times
    s_ips, s_ports, phys_offsets = into.store_ips, into.store_ports, into.commit_log_offsets
    pos = 0
    try:
        while pos < size:
            if size - pos < 88:
                break
            (total, magic, _crc, queue_id, _flag, queue_offset, phys, sys_flag, born_ts,
             _b_ip, _b_port, store_ts, s_ip, s_port, reconsume, _prepared, body_len) = (
                fixed(data, pos)
            )  # fmt: skip
            end = pos + total
            if total < 88 or end > size or body_len < 0:
                break
            if sys_flag & _NOT_PLAIN:  # (a record whose framing holds: alone)
                into.add_messages(decode_messages(data[pos:end], strict=False))
                pos = end
                continue
            p = pos + 88 + body_len
            if magic == MAGIC_V1 and p < end:
                topic_len = data[p]
                p += 1
            elif magic == MAGIC_V2:
                (topic_len,) = i16(data, p)  # (past the end: struct.error)
                p += 2
            else:
                break
            p += topic_len
            if topic_len < 0 or p + 2 > end:
                break
            (props_len,) = i16(data, p)
            p += 2
            if props_len < 0 or p + props_len > end:
                break
            qids.append(queue_id)
            qoffs.append(queue_offset)
            props.append(data[p : p + props_len])
            bodies.append(data[pos + 88 : pos + 88 + body_len])
            born.append(born_ts)
            stored.append(store_ts)
            reconsumes.append(reconsume)
            s_ips.append(s_ip)
            s_ports.append(s_port)
            phys_offsets.append(phys)
            pos = end
    except struct.error:  # (a read past a short record)
        pass
    if pos < size:  # broken framing from here: decode_messages says what it can
        into.add_messages(decode_messages(data[pos:], strict=False))
    return into
