"""Pulled messages as the source's record batches (the executor side, no broker)."""

from __future__ import annotations

import datetime as dt

import attrs
import pyarrow as pa
from anyio.from_thread import start_blocking_portal
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_actors.consumer.core.brokercalls import PullStatus, RawPull
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.messages import RESERVED_PROPERTIES, encode_properties
from rocketmq_actors.protocol.recordcolumns import RecordColumns, decode_columns
from rocketmq_actors.protocol.records import MessageExt, decode_messages
from rocketmq_actors.spark import pulling
from rocketmq_actors.spark.offsets import QueueRange
from rocketmq_actors.spark.pulling import ARROW_SCHEMA, _python_property_columns, columns_batch
from rocketmq_actors.spark.source_options import SourceOptions
from rocketmq_actors.testing.stored import encode_stored


def _message(offset: int, properties: dict[str, str], body: bytes) -> MessageExt:
    return MessageExt(
        topic="t", body=body, raw_properties=encode_properties(properties).encode(),
        queue_id=3, queue_offset=offset, commit_log_offset=1000 + offset, sys_flag=0, flag=0,
        born_timestamp=1_700_000_000_000 + offset, born_ip=b"\x7f\0\0\1", born_port=1,
        store_timestamp=1_700_000_000_500 + offset, store_ip=b"\x7f\0\0\1", store_port=2,
        reconsume_times=offset % 2, prepared_transaction_offset=0, body_crc=0,
        broker_name="broker-a",
    )  # fmt: skip


def record_batch(messages: list[MessageExt]) -> pa.RecordBatch:
    """``messages`` of queue 3 of "t" on broker-a as the source's record batch."""
    columns = RecordColumns()
    columns.add_messages(messages)
    return columns_batch(columns, "t", "broker-a")


def test_every_field_lands_in_its_column_and_reserved_properties_stay_out() -> None:
    messages = [
        _message(7, {"KEYS": "k1 k2", "TAGS": "red", "UNIQ_KEY": "AB01", "colour": "red"}, b"x"),
        _message(8, {"shape": "round"}, b""),
    ]
    batch = record_batch(messages)
    assert batch.schema == ARROW_SCHEMA and batch.num_rows == 2
    rows = batch.to_pylist()
    utc = dt.UTC
    assert rows[0] == {
        "topic": "t", "broker_name": "broker-a", "queue_id": 3, "queue_offset": 7,
        "msg_id": messages[0].msg_id, "keys": ["k1", "k2"], "tags": "red",
        "properties": [("colour", "red")], "body": b"x",
        "born_timestamp": dt.datetime(2023, 11, 14, 22, 13, 20, 7000, tzinfo=utc),
        "store_timestamp": dt.datetime(2023, 11, 14, 22, 13, 20, 507000, tzinfo=utc),
        "reconsume_times": 1,
    }  # fmt: skip
    assert rows[1]["keys"] == [] and rows[1]["tags"] is None
    assert rows[1]["properties"] == [("shape", "round")] and rows[1]["body"] == b""
    assert rows[1]["queue_offset"] == 8 and rows[1]["reconsume_times"] == 0


def _raw(offset: int, raw: bytes) -> MessageExt:
    message = _message(offset, {}, b"")
    return attrs.evolve(message, raw_properties=raw)


_NAMES = st.sampled_from(["KEYS", "TAGS", "UNIQ_KEY", "colour", "n", "", "a b"])
_VALUES = st.sampled_from(["", "v", " k1  k2 ", "k3", "\t", "x\x01y", "émoji 🎉"])


@given(st.lists(st.lists(st.tuples(_NAMES, _VALUES), max_size=6), min_size=1, max_size=8))
def test_arrow_properties_say_what_message_ext_says(messages: list[list[tuple[str, str]]]) -> None:
    """The batch-wide property split against MessageExt's own, on names and values with
    empty parts, whitespace, separators inside values and repeats."""
    batch = [
        _raw(i, "".join(f"{k}\x01{v}\x02" for k, v in pairs).encode())
        for i, pairs in enumerate(messages)
    ]
    arrow = record_batch(batch).to_pylist()
    for row, m in zip(arrow, batch, strict=True):
        assert (row["msg_id"], row["keys"], row["tags"]) == (m.msg_id, m.keys, m.tags)
        user = {k: v for k, v in m.properties.items() if k not in RESERVED_PROPERTIES}
        assert dict(row["properties"]) == user  # a repeat: both pairs, last wins
    # the row-by-row reading (properties that are not UTF-8) says the same
    columns = RecordColumns()
    columns.add_messages(batch)
    by_row = _python_property_columns(columns)
    for row, msg_id, keys, tags, properties in zip(arrow, *by_row, strict=True):
        assert (row["msg_id"], row["keys"], row["tags"]) == (msg_id, keys, tags)
        assert dict(row["properties"]) == dict(properties)


def test_properties_that_are_not_utf8_are_read_message_by_message() -> None:
    batch = [_raw(1, b"KEYS\x01k1\x02"), _raw(2, b"TAGS\x01\xff\xfe\x02colour\x01red\x02")]
    rows = record_batch(batch).to_pylist()
    assert rows[0]["keys"] == ["k1"] and rows[1]["properties"] == [("colour", "red")]
    assert rows[1]["tags"] == "\ufffd\ufffd"
    assert rows[1]["msg_id"] == batch[1].offset_msg_id  # no UNIQ_KEY


def _expected_row(m: MessageExt, topic: str, broker: str) -> dict[str, object]:
    """A message's row read from MessageExt's own fields (not through the source's code)."""
    utc = dt.UTC
    return {
        "topic": topic, "broker_name": broker, "queue_id": m.queue_id,
        "queue_offset": m.queue_offset, "msg_id": m.msg_id, "keys": m.keys, "tags": m.tags,
        "properties": [(k, v) for k, v in m.properties.items() if k not in RESERVED_PROPERTIES],
        "body": m.body,
        "born_timestamp": dt.datetime.fromtimestamp(m.born_timestamp / 1000, utc),
        "store_timestamp": dt.datetime.fromtimestamp(m.store_timestamp / 1000, utc),
        "reconsume_times": m.reconsume_times,
    }  # fmt: skip


def test_a_pull_body_gives_the_rows_its_messages_say() -> None:
    """The source's columns straight from a pull body (plain records), and through
    decode_messages (a body with a compressed record or no UNIQ_KEY), give each message's
    fields."""
    plain = b"".join(
        encode_stored(topic="t", body=b"b%d" % i, queue_offset=i, commit_log_offset=i,
                      reconsume_times=i % 3, born_timestamp=1_700_000_000_000 + i,
                      properties={"KEYS": f"k{i} x", "TAGS": "x", "UNIQ_KEY": f"ID{i}", "n": "1"})
        for i in range(6)
    )  # fmt: skip
    mixed = plain + encode_stored(topic="t", body=b"zz" * 50, queue_offset=6, compress=True)
    for body in (plain, mixed):
        rows = columns_batch(decode_columns(body), "t", "broker-a").to_pylist()
        assert rows == [_expected_row(m, "t", "broker-a") for m in decode_messages(body)]
    assert rows[6]["body"] == b"zz" * 50  # (inflated, as decode_messages does)
    assert rows[6]["msg_id"] == decode_messages(mixed)[6].offset_msg_id  # no UNIQ_KEY


def test_the_topic_column_is_the_topic_without_the_namespace() -> None:
    options = SourceOptions.parse(
        {"namesrv": "127.0.0.1:9876", "topic": "t", "namespace": "ns"}, streaming=False
    )
    part = QueueRange("ns%t", "broker-a", 0, 0, 3)  # (planned with the wire's names)

    class Pulls:
        async def pull_raw(self, queue: MessageQueue, offset: int, **kwargs: object) -> RawPull:
            body = b"".join(encode_stored(topic="ns%t", body=b"x", queue_offset=o)
                            for o in range(offset, 3))  # fmt: skip
            return RawPull(PullStatus.FOUND, 3, 0, 3, body)

    with start_blocking_portal("asyncio") as portal:
        batches = list(pulling._read_one(portal, Pulls(), options, part))  # type: ignore[arg-type]
    rows = [row for batch in batches for row in batch.to_pylist()]
    assert [(r["topic"], r["queue_offset"]) for r in rows] == [("t", 0), ("t", 1), ("t", 2)]
