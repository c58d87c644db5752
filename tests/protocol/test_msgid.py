"""Both message id forms, against vectors laid out as the Java code writes them
(MessageDecoder.createMessageId, MessageClientIDSetter.createUniqID)."""

from __future__ import annotations

import struct
from datetime import datetime

import pytest

from rocketmq_actors.protocol.errors import ProtocolError
from rocketmq_actors.protocol.messages import UniqueIdGenerator, offset_msg_id
from rocketmq_actors.protocol.msgid import decode_message_id, month_start_ms

# a Java SendResult printed by a 4.x client: msgId (UNIQ_KEY) and offsetMsgId of one send
JAVA_UNIQ = "0A00C07AC3B718B4AAC230B977520000"
JAVA_OFFSET = "0A00C07A00002A9F0000000000000000"


def test_java_offset_id() -> None:
    info = decode_message_id(JAVA_OFFSET)
    assert info.kind == "offset"
    assert info.store_host == "10.0.192.122:10911"
    assert info.commit_log_offset == 0
    assert info.client_ip is None and info.born_time_ms(0) is None


def test_java_unique_key() -> None:
    info = decode_message_id(JAVA_UNIQ)
    assert info.kind == "unique"
    assert info.client_ip == "10.0.192.122"
    assert info.pid == 0xC3B7
    # 0x18B4AAC2: the hash code of the JDK 8 application class loader, seen in most ids
    assert info.class_loader_hash == 0x18B4AAC2
    assert info.month_offset_ms == 0x30B97752
    assert info.counter == 0
    assert info.store_host is None and info.commit_log_offset is None


def test_createMessageId_layout_ipv4_and_ipv6() -> None:
    # ByteBuffer: ip bytes, putInt(port), putLong(offset), UtilAll.bytes2string (upper hex)
    raw = bytes([192, 168, 1, 7]) + struct.pack(">iq", 10911, 0x1234_5678_9A)
    info = decode_message_id(raw.hex())  # lower case is accepted
    assert info.msg_id == raw.hex().upper()
    assert (info.kind, info.store_host, info.commit_log_offset) == (
        "offset", "192.168.1.7:10911", 0x1234_5678_9A,
    )  # fmt: skip
    v6 = bytes(15) + b"\x01" + struct.pack(">iq", 10911, 4096)
    assert len(v6.hex()) == 56
    info = decode_message_id(v6.hex().upper())
    assert (info.kind, info.store_host, info.commit_log_offset) == ("offset", "[::1]:10911", 4096)


def test_createUniqID_layout_ipv6_and_late_in_the_month() -> None:
    # ip(16) + putShort(pid) + putInt(classLoader hash) + putInt(ms since month start) +
    # putShort(counter); 0x8ECA39FC ms (27.7 days) is negative as an int32
    raw = bytes(15) + b"\x01" + struct.pack(">HiIH", 0x2B80, -5, 0x8ECA39FC, 7)
    info = decode_message_id(raw.hex())
    assert info.kind == "unique"
    assert (info.client_ip, info.pid, info.class_loader_hash) == ("::1", 0x2B80, -5)
    assert (info.month_offset_ms, info.counter) == (0x8ECA39FC, 7)


def test_our_generated_ids_are_unique_keys_and_our_offset_ids_offsets() -> None:
    gen = UniqueIdGenerator(ip=bytes([10, 1, 2, 3]), pid=4242)
    for msg_id in gen.next_ids(50):
        info = decode_message_id(msg_id)
        assert info.kind == "unique", msg_id
        assert (info.client_ip, info.pid) == ("10.1.2.3", 4242)
    assert decode_message_id(offset_msg_id(bytes([10, 1, 2, 3]), 10911, 1 << 40)).kind == "offset"


def test_born_time_is_within_this_or_last_month() -> None:
    now_ms = int(datetime(2026, 3, 10, 12, 0).timestamp() * 1000)
    start = month_start_ms(now_ms)
    assert start == int(datetime(2026, 3, 1).timestamp() * 1000)
    raw = bytes(4) + struct.pack(">HiIH", 1, 1, 3_600_000, 0)  # one hour into the month
    assert decode_message_id(raw.hex()).born_time_ms(now_ms) == start + 3_600_000
    # an offset past "now" in this month is last month's (getNearlyTimeFromID)
    late = bytes(4) + struct.pack(">HiIH", 1, 1, 20 * 86_400_000, 0)
    feb = int(datetime(2026, 2, 1).timestamp() * 1000)
    assert decode_message_id(late.hex()).born_time_ms(now_ms) == feb + 20 * 86_400_000


@pytest.mark.parametrize("bad", ["", "xyz", "00" * 15, "00" * 17, "0A00C07A00002A9F00000000000000"])
def test_bad_ids_are_refused(bad: str) -> None:
    with pytest.raises(ProtocolError) as caught:
        decode_message_id(bad)
    assert caught.value.reason == "bad-msg-id"


def test_non_string_is_refused() -> None:
    with pytest.raises(ProtocolError):
        decode_message_id(12345)
