from __future__ import annotations

import contextlib
import itertools
import json
import struct
import time
import zlib
from datetime import datetime
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from rocketmq_actors.protocol.compression import CompressionType, compress
from rocketmq_actors.protocol.errors import ProtocolError
from rocketmq_actors.protocol.messages import (
    Message,
    MessageSysFlag,
    Property,
    PullSysFlag,
    UniqueIdGenerator,
    decode_offset_msg_id,
    decode_properties,
    encode_batch,
    encode_properties,
    java_string_hash,
    offset_msg_id,
)
from rocketmq_actors.protocol.records import decode_messages
from rocketmq_actors.testing.stored import encode_stored

FIXTURES = Path(__file__).parent / "fixtures"

_prop_text = st.text(
    st.characters(blacklist_categories=["Cs"], blacklist_characters="\x01\x02"),
    min_size=1,
    max_size=12,
)


@given(st.dictionaries(_prop_text, _prop_text, max_size=8))
def test_properties_round_trip(props: dict[str, str]) -> None:
    text = encode_properties(props)
    assert text == "" or text.endswith("\x02")
    assert decode_properties(text) == props


def test_properties_drop_empty_values_and_junk_segments() -> None:
    assert encode_properties({"a": "", "b": "1"}) == "b\x011\x02"
    assert decode_properties("x\x02\x01v\x02k\x01\x02ok\x01yes\x02") == {"ok": "yes"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("TagA", 2598919),
        ("hello", 99162322),
        ("a" * 20, 1542361408),  # wraps past 2**32 (values from Java 17)
        ("\u00fc", 252),
        ("polygenelubricants", -(2**31)),  # negative: Integer.MIN_VALUE in Java
        ("\U0001f600", 1772899),  # surrogate pair: two UTF-16 units, as in Java
    ],
)
def test_java_string_hash(text: str, expected: int) -> None:
    assert java_string_hash(text) == expected


def test_unique_ids() -> None:
    gen = UniqueIdGenerator(ip=bytes([10, 0, 0, 9]), pid=0x12345)
    ids = [gen.next_id() for _ in range(1000)]
    assert len(set(ids)) == 1000
    for msg_id in ids[:3]:
        assert len(msg_id) == 32 and msg_id == msg_id.upper()
        assert msg_id.startswith("0A0000092345")  # ip + low 16 bits of pid
    batch = gen.next_ids(16)  # one clock reading, consecutive counters
    assert len(set(batch + ids)) == 1016 and {len(i) for i in batch} == {32}
    assert {i[:-4] for i in batch} == {batch[0][:-4]}
    counters = [int(i[-4:], 16) for i in batch]
    assert all((b - a) % 0x10000 == 1 for a, b in itertools.pairwise(counters))
    # the counter goes on past the batch: no later id reuses one of its values
    after = [int(i[-4:], 16) for i in [gen.next_id(), *gen.next_ids(4)]]
    assert after[0] == (counters[-1] + 1) % 0x10000
    assert all((b - a) % 0x10000 == 1 for a, b in itertools.pairwise(after[1:]))
    assert not set(after) & set(counters)


@given(start=st.integers(0, 0x1FFFF), count=st.integers(1, 300))
@example(start=0xF0, count=16).via("a run ending on the last low byte")
@example(start=0xF1, count=16).via("one id past it")
@example(start=0xFFF8, count=16).via("past 16 bits")
def test_batch_ids_are_the_single_ids_in_a_row(start: int, count: int) -> None:
    # next_ids renders a run within one high byte by joining low bytes to a shared prefix,
    # and any other run id by id: both must give what next_id gives, counter by counter
    gen = UniqueIdGenerator(ip=bytes([10, 0, 0, 9]), pid=7)
    gen._counter = itertools.count(start)
    batch = gen.next_ids(count)
    gen._counter = itertools.count(start)
    singles = [gen.next_id() for _ in range(count)]
    assert [i[:-4] for i in batch] == [batch[0][:-4]] * count  # one clock reading
    assert [i[-4:] for i in batch] == [f"{(start + n) & 0xFFFF:04X}" for n in range(count)]
    assert [i[-4:] for i in batch] == [i[-4:] for i in singles]
    gen._counter = itertools.count(start)
    gen.next_ids(count)  # the counter goes on after the run
    assert gen.next_id()[-4:] == f"{(start + count) & 0xFFFF:04X}"


def test_the_time_field_follows_the_clock_past_its_cached_millisecond(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gen = UniqueIdGenerator()
    now = [1_700_000_000_000_000_000]  # ns
    monkeypatch.setattr(time, "time_ns", lambda: now[0])
    first, again = gen.next_id(), gen.next_ids(2)[1]
    now[0] += 1_000_000  # one millisecond on
    later = gen.next_id()
    assert first[:28] == again[:28]
    assert int(later[20:28], 16) == int(first[20:28], 16) + 1


def test_unique_id_time_field_is_ms_since_the_start_of_the_month() -> None:
    gen = UniqueIdGenerator()
    before_ms = time.time_ns() // 1_000_000
    msg_id, (batch_id,) = gen.next_id(), gen.next_ids(1)
    start = datetime.fromtimestamp(before_ms / 1000).replace(day=1, hour=0, minute=0, second=0,
                                                             microsecond=0)  # fmt: skip
    expected = before_ms - int(start.timestamp() * 1000)
    for got in (msg_id, batch_id):
        assert got == got.upper() and len(got) == 32
        assert 0 <= int(got[20:28], 16) - expected < 5000


def test_offset_message_id_round_trip() -> None:
    msg_id = offset_msg_id(bytes([127, 0, 0, 1]), 10911, 244)
    assert msg_id == "7F00000100002A9F00000000000000F4"
    assert decode_offset_msg_id(msg_id) == ("127.0.0.1:10911", 244)
    v6 = offset_msg_id(bytes(15) + b"\x01", 10911, 1)
    assert decode_offset_msg_id(v6) == ("[::1]:10911", 1)
    for bad in ("xyz", "00"):
        with pytest.raises(ProtocolError):
            decode_offset_msg_id(bad)


def test_message_wire_properties() -> None:
    msg = Message(
        topic="t",
        body=b"x",
        tags="a",
        keys=["k1", "k2"],
        properties={"u": "1"},
        delay_level=3,
        deliver_at_ms=123,
        wait_store=False,
    )
    assert msg.wire_properties() == {
        "u": "1",
        "TAGS": "a",
        "KEYS": "k1 k2",
        "DELAY": "3",
        "TIMER_DELIVER_MS": "123",
        "WAIT": "false",
    }


def test_batch_body_layout() -> None:
    body = encode_batch([(b"ab", 7, "k\x01v\x02"), (b"", 0, "")])
    first = (
        struct.pack(">iiiii", 22 + 2 + 4, 0, 0, 7, 2) + b"ab" + struct.pack(">h", 4) + b"k\x01v\x02"
    )
    second = struct.pack(">iiiii", 22, 0, 0, 0, 0) + struct.pack(">h", 0)
    assert body == first + second


def test_batch_rejects_oversized_properties() -> None:
    with pytest.raises(ProtocolError):
        encode_batch([(b"x", 0, "k\x01" + "v" * 40000 + "\x02")])


def test_pull_sys_flag() -> None:
    assert PullSysFlag.build(commit_offset=True, suspend=True, subscription=False) == 0x3


def test_real_pull_body_fixture() -> None:
    """Three messages stored by a real 5.3.3 broker; the third was sent zlib-compressed."""
    expected = json.loads((FIXTURES / "pull_body.json").read_text())
    messages = decode_messages((FIXTURES / "pull_body.bin").read_bytes())
    assert len(messages) == len(expected) == 3
    for msg, want in zip(messages, expected, strict=True):
        assert msg.topic == "FixtureTopic"
        assert msg.body == bytes.fromhex(want["body_hex"])
        assert msg.flag == want["flag"] and msg.queue_offset == want["queue_offset"]
        assert msg.offset_msg_id == want["offset_msg_id"]
        for key, value in want["properties"].items():
            assert msg.properties[key] == value
        assert msg.msg_id == want["properties"][Property.UNIQ_KEY]
        assert msg.properties[Property.MSG_REGION] == "DefaultRegion"  # added by the broker
        assert not msg.sys_flag & MessageSysFlag.COMPRESSED
    assert messages[2].body_crc != zlib.crc32(messages[2].body) & 0x7FFFFFFF  # CRC of stored form
    assert (
        decode_messages((FIXTURES / "pull_body.bin").read_bytes(), decompress=False)[2].sys_flag
        & MessageSysFlag.COMPRESSED
    )


_hosts = st.sampled_from(["127.0.0.1:1", "10.1.2.3:10911", "[::1]:5", "[2001:db8::7]:65000"])


@given(
    topic=st.text(st.characters(blacklist_categories=["Cs"]), min_size=1, max_size=30),
    body=st.binary(max_size=300),
    props=st.dictionaries(_prop_text, _prop_text, max_size=5),
    born=_hosts,
    store=_hosts,
    v2=st.booleans(),
    compress=st.booleans(),
    queue_offset=st.integers(0, 2**62),
    reconsume=st.integers(0, 100),
)
def test_stored_message_round_trip(
    topic: str,
    body: bytes,
    props: dict[str, str],
    born: str,
    store: str,
    v2: bool,
    compress: bool,
    queue_offset: int,
    reconsume: int,
) -> None:
    if len(topic.encode()) > 255:
        v2 = True
    record = encode_stored(
        topic=topic,
        body=body,
        properties=props,
        born_host=born,
        store_host=store,
        v2_magic=v2,
        compress=compress,
        queue_offset=queue_offset,
        reconsume_times=reconsume,
    )
    (msg,) = decode_messages(record + b"")
    assert (msg.topic, msg.body, msg.properties) == (topic, body, props)
    assert (msg.born_host, msg.store_host) == (born, store)
    assert msg.queue_offset == queue_offset and msg.reconsume_times == reconsume
    assert decode_offset_msg_id(msg.offset_msg_id) == (store, 0)


def test_inner_batch_is_unwrapped() -> None:
    inner = encode_batch([(b"one", 1, "TAGS\x01a\x02"), (b"two", 2, "TAGS\x01b\x02")])
    record = encode_stored(
        topic="t",
        body=inner,
        queue_offset=10,
        sys_flag=MessageSysFlag.INNER_BATCH | MessageSysFlag.NEED_UNWRAP,
    )
    msgs = decode_messages(record)
    assert [(m.body, m.flag, m.tags, m.queue_offset) for m in msgs] == [
        (b"one", 1, "a", 10),
        (b"two", 2, "b", 11),
    ]


@pytest.mark.parametrize("kind", list(CompressionType))
def test_compressed_bodies_are_inflated_by_their_type_bits(kind: CompressionType) -> None:
    body = b"a body worth compressing " * 200
    record = encode_stored(topic="t", body=compress(body, kind, 5), sys_flag=kind.sys_flag)
    (msg,) = decode_messages(record)
    assert msg.body == body and msg.sys_flag & MessageSysFlag.COMPRESSION_MASK == 0


def test_unknown_compression_bits_are_a_typed_error() -> None:
    record = encode_stored(
        topic="t", body=zlib.compress(b"x" * 100), sys_flag=MessageSysFlag.COMPRESSED | 0x400
    )
    with pytest.raises(ProtocolError, match="unsupported-compression"):
        decode_messages(record)
    (msg,) = decode_messages(record, strict=False)
    assert msg.decode_error is not None and "unsupported-compression" in msg.decode_error


RECORDS = [
    encode_stored(topic="T", body=bytes(range(i * 10)), properties={"k": str(i)}, queue_offset=i)
    for i in range(5)
]
SAMPLE = b"".join(RECORDS)


RECORD_ENDS = {sum(len(r) for r in RECORDS[: i + 1]) for i in range(len(RECORDS))}


@given(st.integers(0, len(SAMPLE)))
def test_truncated_bodies_raise_protocol_error(cut: int) -> None:
    data = SAMPLE[:cut]
    if cut == 0 or cut in RECORD_ENDS:  # a cut at a record boundary is a shorter valid body
        assert len(decode_messages(data)) == sum(1 for end in RECORD_ENDS if end <= cut)
    else:
        with pytest.raises(ProtocolError):
            decode_messages(data)


@given(st.binary(min_size=1, max_size=16), st.integers(0, len(SAMPLE)))
def test_corrupted_bodies_raise_only_protocol_error(noise: bytes, at: int) -> None:
    data = SAMPLE[:at] + noise + SAMPLE[at + len(noise) :]
    with contextlib.suppress(ProtocolError):
        decode_messages(data)


@given(st.binary(max_size=400))
def test_garbage_raises_only_protocol_error(data: bytes) -> None:
    with contextlib.suppress(ProtocolError):
        decode_messages(data)


@given(
    st.lists(
        st.tuples(
            st.binary(max_size=64),
            st.integers(-(2**31), 2**31 - 1),
            st.dictionaries(_prop_text, _prop_text, max_size=4),
        ),
        min_size=1,
        max_size=8,
    )
)
def test_batch_round_trips_through_the_inner_batch_decoder(
    items: list[tuple[bytes, int, dict[str, str]]],
) -> None:
    batch = encode_batch((body, flag, encode_properties(props)) for body, flag, props in items)
    record = encode_stored(
        topic="t", body=batch, sys_flag=MessageSysFlag.INNER_BATCH | MessageSysFlag.NEED_UNWRAP
    )
    decoded = decode_messages(record)
    assert [(m.body, m.flag, m.properties) for m in decoded] == items
