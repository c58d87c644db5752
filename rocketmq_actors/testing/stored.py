"""Build stored-message records (the layout of pull / view / check-transaction bodies).

The inverse of :func:`rocketmq_actors.protocol.records.decode_messages`, for tests, benchmarks
and fake servers: a real broker produces these bytes; this module produces the same layout
without one.
"""

from __future__ import annotations

import ipaddress
import struct
import zlib
from collections.abc import Mapping

from rocketmq_actors.protocol.messages import MessageSysFlag, encode_properties
from rocketmq_actors.protocol.records import MAGIC_V1, MAGIC_V2

__all__ = ["encode_stored"]


def _host(addr: str) -> tuple[bytes, int]:
    host, _, port = addr.rpartition(":")
    return ipaddress.ip_address(host.strip("[]")).packed, int(port)


def encode_stored(
    *,
    topic: str,
    body: bytes,
    properties: Mapping[str, str] | None = None,
    queue_id: int = 0,
    queue_offset: int = 0,
    commit_log_offset: int = 0,
    sys_flag: int = 0,
    flag: int = 0,
    born_timestamp: int = 1_700_000_000_000,
    born_host: str = "127.0.0.1:50000",
    store_timestamp: int = 1_700_000_000_001,
    store_host: str = "127.0.0.1:10911",
    reconsume_times: int = 0,
    prepared_transaction_offset: int = 0,
    v2_magic: bool = False,
    compress: bool = False,
) -> bytes:
    """One stored-message record. IPv6 host flags are derived from the addresses."""
    b_ip, b_port = _host(born_host)
    s_ip, s_port = _host(store_host)
    if len(b_ip) == 16:
        sys_flag |= MessageSysFlag.BORNHOST_V6
    if len(s_ip) == 16:
        sys_flag |= MessageSysFlag.STOREHOST_V6
    if compress:
        body = zlib.compress(body, 5)
        sys_flag |= MessageSysFlag.COMPRESSED | MessageSysFlag.COMPRESSION_ZLIB
    topic_bytes = topic.encode()
    props = encode_properties(properties or {}).encode()
    topic_len = struct.pack(">h", len(topic_bytes)) if v2_magic else bytes([len(topic_bytes)])
    rest = b"".join(
        (
            struct.pack(
                ">iiqqiq", queue_id, flag, queue_offset, commit_log_offset, sys_flag, born_timestamp
            ),
            b_ip,
            struct.pack(">iq", b_port, store_timestamp),
            s_ip,
            struct.pack(">iiqi", s_port, reconsume_times, prepared_transaction_offset, len(body)),
            body,
            topic_len,
            topic_bytes,
            struct.pack(">h", len(props)),
            props,
        )
    )
    crc = zlib.crc32(body) & 0x7FFFFFFF
    total = 12 + len(rest)
    return struct.pack(">iii", total, MAGIC_V2 if v2_magic else MAGIC_V1, crc) + rest
