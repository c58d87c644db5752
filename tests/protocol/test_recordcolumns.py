"""Records straight into columns, against decode_messages on the same bytes."""

from __future__ import annotations

import attrs
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_actors.protocol.recordcolumns import RecordColumns, decode_plain_columns
from rocketmq_actors.protocol.records import decode_messages
from rocketmq_actors.testing.stored import encode_stored


def _expected(data: bytes) -> RecordColumns:
    columns = RecordColumns()
    columns.add_messages(decode_messages(data, strict=False))
    return columns


_KINDS = st.sampled_from(["plain", "v2", "born-v6", "store-v6", "compressed"])
_PROPERTIES = st.dictionaries(
    st.sampled_from(["KEYS", "TAGS", "UNIQ_KEY", "colour"]),
    st.text("abc é", min_size=1, max_size=5),
    max_size=3,
)
_RECORD = st.tuples(_KINDS, st.binary(max_size=40), _PROPERTIES, st.integers(0, 2**40),
                    st.integers(0, 16))  # fmt: skip


def _record(index: int, kind: str, body: bytes, props: dict[str, str], phys: int,
            reconsume: int) -> bytes:  # fmt: skip
    return encode_stored(
        topic="topic-é", body=body, properties=props, queue_id=3, queue_offset=100 + index,
        commit_log_offset=phys, born_timestamp=1_700_000_000_000 + index,
        store_timestamp=1_700_000_000_500 + index, reconsume_times=reconsume,
        v2_magic=kind == "v2", compress=kind == "compressed",
        born_host="[::1]:5000" if kind == "born-v6" else "127.0.0.1:5000",
        store_host="[fe80::2]:10911" if kind == "store-v6" else "10.0.0.7:10911",
    )  # fmt: skip


@given(st.lists(_RECORD, max_size=6))
def test_plain_records_become_the_columns_decode_messages_gives(
    records: list[tuple[str, bytes, dict[str, str], int, int]],
) -> None:
    data = b"".join(_record(i, *record) for i, record in enumerate(records))
    before = RecordColumns()
    before.add_messages(decode_messages(_record(0, "plain", b"kept", {}, 1, 0)))
    into = attrs.evolve(before, **{a.name: list(getattr(before, a.name))
                                   for a in attrs.fields(RecordColumns)})  # fmt: skip
    plain = all(kind in ("plain", "v2") for kind, *_ in records)
    assert decode_plain_columns(data, into) is plain
    if plain:  # appended after what was there, equal to decode_messages' fields
        expected = attrs.evolve(before)
        expected.extend(_expected(data))
        assert into == expected
    else:  # left to decode_messages, nothing appended
        assert into == before
    if plain:  # the offset message id (a record without UNIQ_KEY) as MessageExt's
        messages = decode_messages(data)
        assert [into.offset_msg_id(1 + i) for i in range(len(messages))] == [
            m.offset_msg_id for m in messages
        ]


def test_broken_framing_is_left_to_decode_messages_without_raising() -> None:
    record = _record(0, "plain", b"body", {"TAGS": "a"}, 5, 0)
    for data in (record[:50], record[:-1], record + b"\0" * 10, b"\xff" * 100,
                 record[:4] + b"\0\0\0\0" + record[8:]):  # fmt: skip
        into = RecordColumns()
        assert decode_plain_columns(data, into) is False
        assert len(into) == 0


def test_columns_extend_and_truncate_row_for_row() -> None:
    data = b"".join(_record(i, "plain", b"%d" % i, {}, i, 0) for i in range(5))
    columns = RecordColumns()
    assert decode_plain_columns(data, columns) and decode_plain_columns(data, columns)
    assert len(columns) == 10 and columns.bodies[5] == b"0"
    columns.truncate(3)
    assert len(columns) == 3
    assert all(len(getattr(columns, a.name)) == 3 for a in attrs.fields(RecordColumns))
