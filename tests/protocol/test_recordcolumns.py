"""Records straight into columns, against decode_messages on the same bytes."""

from __future__ import annotations

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_actors.protocol import recordcolumns
from rocketmq_actors.protocol.errors import ProtocolError
from rocketmq_actors.protocol.messages import MessageSysFlag, encode_batch
from rocketmq_actors.protocol.recordcolumns import RecordColumns, decode_columns
from rocketmq_actors.protocol.records import decode_messages
from rocketmq_actors.testing.stored import encode_stored


def _expected(data: bytes) -> RecordColumns:
    columns = RecordColumns()
    columns.add_messages(decode_messages(data, strict=False))
    return columns


_KINDS = st.sampled_from(["plain", "v2", "born-v6", "store-v6", "compressed", "inner-batch"])
_PROPERTIES = st.dictionaries(
    st.sampled_from(["KEYS", "TAGS", "UNIQ_KEY", "colour"]),
    st.text("abc é", min_size=1, max_size=5),
    max_size=3,
)
_RECORD = st.tuples(_KINDS, st.binary(max_size=40), _PROPERTIES, st.integers(0, 2**40),
                    st.integers(0, 16))  # fmt: skip
_UNWRAP = MessageSysFlag.INNER_BATCH | MessageSysFlag.NEED_UNWRAP


def _record(index: int, kind: str, body: bytes, props: dict[str, str], phys: int,
            reconsume: int) -> bytes:  # fmt: skip
    if kind == "inner-batch":  # two messages inside one record, unwrapped by decode_messages
        body = encode_batch([(body or b"x", 1, "TAGS\x01a\x02"), (b"two", 2, "KEYS\x01k\x02")])
    return encode_stored(
        topic="topic-é", body=body, properties=props, queue_id=3, queue_offset=100 + index,
        commit_log_offset=phys, born_timestamp=1_700_000_000_000 + index,
        store_timestamp=1_700_000_000_500 + index, reconsume_times=reconsume,
        v2_magic=kind == "v2", compress=kind == "compressed",
        born_host="[::1]:5000" if kind == "born-v6" else "127.0.0.1:5000",
        store_host="[fe80::2]:10911" if kind == "store-v6" else "10.0.0.7:10911",
        sys_flag=_UNWRAP if kind == "inner-batch" else 0,
    )  # fmt: skip


@given(st.lists(_RECORD, max_size=6))
def test_the_columns_are_the_fields_decode_messages_gives(
    records: list[tuple[str, bytes, dict[str, str], int, int]],
) -> None:
    data = b"".join(_record(i, *record) for i, record in enumerate(records))
    columns = decode_columns(data)
    assert columns == _expected(data)
    # the offset message id (a record without UNIQ_KEY) as MessageExt's
    messages = decode_messages(data)
    assert [columns.offset_msg_id(i) for i in range(len(messages))] == [
        m.offset_msg_id for m in messages
    ]


def test_only_the_records_that_are_not_plain_go_through_decode_messages(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plain = [_record(i, "plain", b"%d" % i, {}, i, 0) for i in range(4)]
    compressed = _record(4, "compressed", b"z" * 100, {}, 4, 0)
    data = plain[0] + plain[1] + compressed + plain[2] + plain[3]
    given: list[bytes] = []

    def spy(body: bytes, *, strict: bool = True) -> object:
        given.append(body)
        return decode_messages(body, strict=strict)

    monkeypatch.setattr(recordcolumns, "decode_messages", spy)
    columns = decode_columns(data)
    assert given == [compressed]  # the plain ones around it kept the fast way
    assert columns == _expected(data)
    assert columns.bodies[2] == b"z" * 100  # (inflated)


def test_broken_framing_gives_what_decode_messages_gives() -> None:
    good = _record(0, "plain", b"kept", {"TAGS": "t"}, 1, 0)
    record = _record(1, "plain", b"body", {"TAGS": "a"}, 5, 0)
    for broken in (record[:50], record[:-1], record + b"\0" * 10, b"\xff" * 100,
                   record[:4] + b"\0\0\0\0" + record[8:]):  # fmt: skip
        data = good + broken
        try:
            expected = _expected(data)
        except ProtocolError as exc:  # (decode_messages' own error, raised the same way)
            with pytest.raises(ProtocolError, match=exc.reason):
                decode_columns(data)
            continue
        columns = decode_columns(data)
        assert columns == expected
        assert columns.bodies[0] == b"kept"


def test_columns_joined_and_truncated_row_for_row() -> None:
    records = [_record(i, "plain", b"%d" % i, {}, i, 0) for i in range(5)]
    first = decode_columns(b"".join(records))
    assert RecordColumns.joined([first]) is first
    four = decode_columns(b"".join(records[:4]))
    columns = RecordColumns.joined([first, RecordColumns(), four, first])
    assert len(columns) == 14 and columns.bodies[5] == b"0" and columns.bodies[9] == b"0"
    assert columns.queue_offsets == first.queue_offsets + four.queue_offsets + first.queue_offsets
    columns.truncate(3)
    assert len(columns) == 3
    assert len(first) == len(four) + 1 == 5  # (its parts are left as they were)
    assert all(len(getattr(columns, a.name)) == 3 for a in attrs.fields(RecordColumns))
