"""Pulled messages as the source's record batches (the executor side, no broker)."""

from __future__ import annotations

import datetime as dt

from rocketmq_actors.protocol.messages import encode_properties
from rocketmq_actors.protocol.records import MessageExt
from rocketmq_actors.spark.pulling import ARROW_SCHEMA, record_batch


def _message(offset: int, properties: dict[str, str], body: bytes) -> MessageExt:
    return MessageExt(
        topic="t", body=body, raw_properties=encode_properties(properties).encode(),
        queue_id=3, queue_offset=offset, commit_log_offset=1000 + offset, sys_flag=0, flag=0,
        born_timestamp=1_700_000_000_000 + offset, born_ip=b"\x7f\0\0\1", born_port=1,
        store_timestamp=1_700_000_000_500 + offset, store_ip=b"\x7f\0\0\1", store_port=2,
        reconsume_times=offset % 2, prepared_transaction_offset=0, body_crc=0,
        broker_name="broker-a",
    )  # fmt: skip


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
