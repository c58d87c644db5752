"""DataFrame columns -> messages (rocketmq_actors.spark.columns and rowvalues), without Spark:
schemas built by hand, rows as tuples (what the writer's iterator hands over)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from rocketmq_actors.errors import ConfigError, InvalidMessage, RocketMQError
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.spark import ColumnError, OptionError
from rocketmq_actors.spark.columns import QueueById, RowPlan, plan_rows

KAFKA_HEADERS = ArrayType(
    StructType([StructField("key", StringType()), StructField("value", BinaryType())])
)
STRING_MAP = MapType(StringType(), StringType())


def schema(**columns: DataType) -> StructType:
    return StructType([StructField(name, kind) for name, kind in columns.items()])


def plan(**columns: DataType) -> RowPlan:
    return plan_rows(schema(**columns), "T_cols")


def test_errors_are_config_errors_and_still_value_errors() -> None:
    for error in (ColumnError, OptionError):
        assert issubclass(error, ConfigError) and issubclass(error, RocketMQError)
        assert issubclass(error, ValueError)
    with pytest.raises(ConfigError, match="exactly one"):
        plan(tags=StringType())


def test_every_column_reaches_the_message() -> None:
    row_plan = plan(
        body=BinaryType(), keys=ArrayType(StringType()), tags=StringType(),
        properties=STRING_MAP, topic=StringType(), delay_level=IntegerType(),
    )  # fmt: skip
    message, route = row_plan.to_message((b"b", ["k1", "", "k2"], "t", {"p": "1"}, "T_row", 3))
    assert (message.topic, message.body, message.keys, message.tags) == (
        "T_row", b"b", ("k1", "k2"), "t"
    )  # fmt: skip
    assert (message.properties, message.delay_level, message.deliver_at_ms) == ({"p": "1"}, 3, None)
    assert route is None


def test_kafka_names_are_aliases() -> None:
    row_plan = plan(key=BinaryType(), value=BinaryType(), headers=KAFKA_HEADERS)
    headers = [("trace", b"abc"), ("n", bytearray(b"7"))]
    message, _ = row_plan.to_message((bytearray(b"k-1"), bytearray(b"v"), headers))
    assert (message.keys, message.body, message.properties) == (
        ("k-1",), b"v", {"trace": "abc", "n": "7"}
    )  # fmt: skip
    # a string key, and headers as a map<string,string>, are taken too
    row_plan = plan(key=StringType(), value=StringType(), headers=STRING_MAP)
    message, _ = row_plan.to_message(("k-2", "text", {"a": "b"}))
    assert (message.keys, message.body, message.properties) == (("k-2",), b"text", {"a": "b"})
    # nulls: no key, no properties
    message, _ = row_plan.to_message((None, "text", None))
    assert (message.keys, message.properties) == ((), {})


@pytest.mark.parametrize(
    ("columns", "match"),
    [
        ({"body": BinaryType(), "value": BinaryType()}, "exactly one"),
        ({"body": BinaryType(), "keys": StringType(), "key": StringType()}, "'keys' and 'key'"),
        ({"body": BinaryType(), "properties": STRING_MAP, "headers": KAFKA_HEADERS},
         "'properties' and 'headers'"),
        ({"body": BinaryType(), "broker_name": StringType()}, "queue_id"),
    ],
)  # fmt: skip
def test_conflicting_columns_are_refused_at_plan_time(
    columns: dict[str, DataType], match: str
) -> None:
    with pytest.raises(ColumnError, match=match):
        plan(**columns)


@pytest.mark.parametrize(
    ("name", "kind", "match"),
    [
        ("delay_level", StringType(), "'delay_level' is string, expected an integer type"),
        ("queue_id", StringType(), "'queue_id' is string, expected an integer type"),
        ("deliver_at", IntegerType(), "'deliver_at' is int, expected timestamp or bigint"),
        ("deliver_at", TimestampNTZType(), "cast it to timestamp"),
        ("key", ArrayType(StringType()), "'key' is array<string>, expected string or binary"),
        ("headers", ArrayType(StringType()), "array<struct<key:string,value:binary>>"),
        ("headers", ArrayType(StructType([StructField("k", StringType()),
                                          StructField("value", BinaryType())])), "Kafka's"),
        ("headers", MapType(StringType(), BinaryType()), "map<string,string>"),
        ("broker_name", IntegerType(), "'broker_name' is int, expected string"),
    ],
)  # fmt: skip
def test_wrong_types_are_refused_naming_the_column(name: str, kind: DataType, match: str) -> None:
    extra = {"queue_id": IntegerType()} if name == "broker_name" else {}
    with pytest.raises(ColumnError, match=match):
        plan(body=BinaryType(), **extra, **{name: kind})


def test_unknown_columns_still_refused_unless_ignored() -> None:
    with pytest.raises(ColumnError, match=r"unknown column.*'partition'"):
        plan(value=BinaryType(), partition=IntegerType())
    row_plan = plan_rows(schema(value=BinaryType(), partition=IntegerType()), "T_x",
                         ignore_extra=True)  # fmt: skip
    assert row_plan.to_message((b"v", 3))[0].body == b"v"


def test_delay_level_and_deliver_at() -> None:
    row_plan = plan(body=BinaryType(), delay_level=ShortType(), deliver_at=TimestampType())
    assert row_plan.to_message((b"x", 18, None))[0].delay_level == 18
    for none in (0, None):  # no delay
        message, _ = row_plan.to_message((b"x", none, None))
        assert (message.delay_level, message.deliver_at_ms) == (0, None)
    at = dt.datetime(2030, 1, 2, 3, 4, 5, 678000, tzinfo=dt.UTC)
    assert row_plan.to_message((b"x", None, at))[0].deliver_at_ms == 1893553445678
    # PySpark's naive local-time datetime for a timestamp: the same instant
    local = dt.datetime.fromtimestamp(1893553445.678)
    assert row_plan.to_message((b"x", 0, local))[0].deliver_at_ms == 1893553445678
    epoch = plan(body=BinaryType(), deliver_at=LongType())
    assert epoch.to_message((b"x", 1893553445678))[0].deliver_at_ms == 1893553445678


@pytest.mark.parametrize(
    ("row", "match"),
    [
        ((b"x", 2, dt.datetime(2030, 1, 1, tzinfo=dt.UTC)), "both set: give at most one"),
        ((b"x", 19, None), "delay_level 19 is outside 1..18"),
        ((b"x", -1, None), "delay_level -1 is outside"),
        ((None, 1, None), "body is null"),
    ],
)
def test_a_row_with_bad_delays_fails_alone(row: tuple[Any, ...], match: str) -> None:
    row_plan = plan(body=BinaryType(), delay_level=IntegerType(), deliver_at=TimestampType())
    with pytest.raises(InvalidMessage, match=match):
        row_plan.to_message(row)


def test_negative_epoch_deliver_at_fails_the_row() -> None:
    with pytest.raises(InvalidMessage, match="before 1970"):
        plan(body=BinaryType(), deliver_at=LongType()).to_message((b"x", -5))


@pytest.mark.parametrize(
    ("row", "match"),
    [
        ((b"\xff\xfe", b"v", None), "key is not UTF-8"),
        ((b"k", b"v", [("h", b"\xc3")]), "header 'h' is not UTF-8"),
        ((b"k", b"v", [("h", b"1"), ("h", b"2")]), "header 'h' is given twice"),
        ((b"k", b"v", [("h", None)]), "null key or value"),
    ],
)
def test_kafka_rows_that_are_not_text_fail_alone(row: tuple[Any, ...], match: str) -> None:
    row_plan = plan(key=BinaryType(), value=BinaryType(), headers=KAFKA_HEADERS)
    with pytest.raises(InvalidMessage, match=match):
        row_plan.to_message(row)


QUEUES = [MessageQueue("T_q", b, i) for b in ("broker-a", "broker-b") for i in range(4)]


def test_queue_id_routes_to_that_queue() -> None:
    row_plan = plan(body=BinaryType(), queue_id=IntegerType(), sharding_key=StringType())
    message, route = row_plan.to_message((b"x", 2, None))
    assert route == QueueById(2)
    assert isinstance(route, QueueById)
    assert route(QUEUES, message, None) == MessageQueue("T_q", "broker-a", 2)  # first broker
    assert row_plan.to_message((b"x", None, "user-1"))[1] == "user-1"  # a sharding key instead
    assert row_plan.to_message((b"x", None, None))[1] is None  # round robin
    with pytest.raises(InvalidMessage, match="sharding_key and queue_id both set"):
        row_plan.to_message((b"x", 1, "user-1"))


def test_queue_id_with_broker_name() -> None:
    row_plan = plan(body=BinaryType(), queue_id=IntegerType(), broker_name=StringType())
    message, route = row_plan.to_message((b"x", 3, "broker-b"))
    assert isinstance(route, QueueById)
    assert route(QUEUES, message, None) == MessageQueue("T_q", "broker-b", 3)


@pytest.mark.parametrize(
    ("selector", "match"),
    [
        (QueueById(4), "queue_id 4 is not a writable queue of topic 'T_cols'; it has "
                       "broker-a: queues 0..3, broker-b: queues 0..3"),
        (QueueById(-1), "queue_id -1 is not"),
        (QueueById(0, "broker-c"), "queue_id 0 on broker 'broker-c' is not"),
    ],
)  # fmt: skip
def test_a_queue_the_topic_lacks_fails_the_send(selector: QueueById, match: str) -> None:
    message, _ = plan(body=BinaryType()).to_message((b"x",))
    with pytest.raises(InvalidMessage, match=match):
        selector(QUEUES, message, None)
