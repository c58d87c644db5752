"""DataFrame columns -> RocketMQ messages: checked once against the schema (on the driver,
before any task runs), then applied to every row.

| column | Spark type | message |
|---|---|---|
| ``body`` or ``value`` (one of them, required) | binary or string (UTF-8) | body |
| ``keys`` or ``key`` | string or array<string>; ``key``: string or binary (UTF-8) | keys |
| ``tags`` | string | tags |
| ``properties`` or ``headers`` | map<string,string>; ``headers``: also Kafka's
  array<struct<key:string,value:binary>> | user properties |
| ``sharding_key`` | string | queue choice: same key, same queue, in order |
| ``queue_id`` (``broker_name``) | int (string) | queue choice: that queue of the topic |
| ``delay_level`` | int, 1-18 (0 or null: none) | the broker's delay levels (1 s .. 2 h) |
| ``deliver_at`` | timestamp or long (epoch ms) | 5.x timer delivery at that time |
| ``topic`` | string | per-row topic (else the ``topic`` option) |

``value``, ``key`` and ``headers`` are the names Spark's Kafka sink uses: a DataFrame written to
Kafka can be written here unchanged. A DataFrame with both a Kafka name and its RocketMQ name
(``key`` and ``keys``) is refused. Any other column is refused unless ``ignore_extra`` is set:
a misspelt ``tag`` column would otherwise vanish silently.

A row that cannot be a message (a null body, both ``delay_level`` and ``deliver_at``, a
``queue_id`` the topic does not have, a header value that is not UTF-8) fails alone, with the
reason (:class:`~rocketmq_actors.errors.InvalidMessage`); the other rows are sent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attrs
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    ByteType,
    DataType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from rocketmq_actors.errors import ConfigError, InvalidMessage
from rocketmq_actors.names import validate_topic
from rocketmq_actors.producer import Message

from .rowvalues import QueueById, epoch_ms, header_properties, text

__all__ = ["KNOWN", "ColumnError", "QueueById", "RowPlan", "plan_rows"]

KNOWN = (
    "body", "value", "keys", "key", "tags", "properties", "headers", "sharding_key", "topic",
    "queue_id", "broker_name", "delay_level", "deliver_at",
)  # fmt: skip
# a Kafka column name and the RocketMQ one it stands for: a DataFrame may have one of the two
ALIASES = {"value": "body", "key": "keys", "headers": "properties"}


class ColumnError(ConfigError):
    """The DataFrame's columns cannot be turned into messages."""


def _string(kind: DataType) -> bool:
    return isinstance(kind, StringType)


def _integer(kind: DataType) -> bool:
    return isinstance(kind, ByteType | ShortType | IntegerType | LongType)


def _string_map(kind: DataType) -> bool:
    return isinstance(kind, MapType) and _string(kind.keyType) and _string(kind.valueType)


def _kafka_headers(kind: DataType) -> bool:
    """Kafka's ``array<struct<key:string,value:binary>>`` (a string value is taken too)."""
    if not isinstance(kind, ArrayType) or not isinstance(kind.elementType, StructType):
        return False
    fields = {f.name: f.dataType for f in kind.elementType.fields}
    return (
        set(fields) == {"key", "value"}
        and _string(fields["key"])
        and isinstance(fields["value"], BinaryType | StringType)
    )


_CHECKS: dict[str, tuple[Callable[[DataType], bool], str]] = {
    "body": (lambda k: isinstance(k, BinaryType | StringType), "binary or string"),
    "value": (lambda k: isinstance(k, BinaryType | StringType), "binary or string"),
    "keys": (
        lambda k: _string(k) or (isinstance(k, ArrayType) and _string(k.elementType)),
        "string or array<string>",
    ),
    "key": (lambda k: isinstance(k, BinaryType | StringType), "string or binary"),
    "properties": (_string_map, "map<string,string>"),
    "headers": (
        lambda k: _string_map(k) or _kafka_headers(k),
        "array<struct<key:string,value:binary>> (Kafka's) or map<string,string>",
    ),
    "queue_id": (_integer, "an integer type"),
    "delay_level": (_integer, "an integer type"),
    "deliver_at": (
        lambda k: isinstance(k, TimestampType | LongType),
        "timestamp or bigint (epoch milliseconds)",
    ),
}


def _check(name: str, kind: DataType) -> None:
    ok, wanted = _CHECKS.get(name, (_string, "string"))
    if ok(kind):
        return
    hint = ""
    if isinstance(kind, TimestampNTZType):
        hint = " (a timestamp without time zone names no instant: cast it to timestamp)"
    raise ColumnError(f"column {name!r} is {kind.simpleString()}, expected {wanted}{hint}")


@attrs.frozen
class RowPlan:
    """Where each message field sits in a row (by position; None: no such column)."""

    body: int
    body_is_text: bool
    keys: int | None
    keys_is_list: bool
    tags: int | None
    properties: int | None
    sharding_key: int | None
    topic: int | None
    default_topic: str | None
    key: int | None = None  # Kafka's single key (string or binary)
    headers_are_kafka: bool = False  # ``properties`` holds Kafka's array of key/value structs
    queue_id: int | None = None
    broker_name: int | None = None
    delay_level: int | None = None
    deliver_at: int | None = None

    def to_message(self, row: Sequence[Any]) -> tuple[Message, str | QueueById | None]:
        """The message of one row and how to route it (a sharding key, a queue, or None:
        round robin); :class:`InvalidMessage` for a row that cannot be one (null body or
        topic, two delays, a header value that is not UTF-8, ...)."""
        body = row[self.body]
        if body is None:
            raise InvalidMessage("body is null")
        if self.body_is_text:
            body = body.encode()
        topic = row[self.topic] if self.topic is not None else None
        topic = topic or self.default_topic
        if not topic:
            raise InvalidMessage("topic is null and no topic option was given")
        level, at = self._delay(row)
        message = Message(
            topic=topic,
            body=bytes(body),
            keys=self._keys(row),
            tags=row[self.tags] if self.tags is not None else None,
            properties=self._properties(row),
            delay_level=level,
            deliver_at_ms=at,
        )
        return message, self._route(row)

    def _keys(self, row: Sequence[Any]) -> list[str]:
        if self.key is not None:
            key = row[self.key]
            return [] if key is None else [k for k in [text("key", key)] if k]
        if self.keys is None or row[self.keys] is None:
            return []
        raw = row[self.keys]
        return [k for k in raw if k] if self.keys_is_list else [raw]

    def _properties(self, row: Sequence[Any]) -> dict[str, str]:
        if self.properties is None or row[self.properties] is None:
            return {}
        if self.headers_are_kafka:
            return header_properties(row[self.properties])
        return dict(row[self.properties])

    def _delay(self, row: Sequence[Any]) -> tuple[int, int | None]:
        """``(delay_level, deliver_at_ms)`` of the row (0 and None: not delayed)."""
        level = row[self.delay_level] if self.delay_level is not None else None
        at = row[self.deliver_at] if self.deliver_at is not None else None
        if level and at is not None:
            raise InvalidMessage(
                f"delay_level {level} and deliver_at {at} both set: give at most one"
            )
        if level:
            if not 1 <= level <= 18:
                raise InvalidMessage(f"delay_level {level} is outside 1..18 (0 or null: none)")
            return level, None
        return 0, None if at is None else epoch_ms(at)

    def _route(self, row: Sequence[Any]) -> str | QueueById | None:
        key = row[self.sharding_key] if self.sharding_key is not None else None
        queue = row[self.queue_id] if self.queue_id is not None else None
        if queue is None:
            return key
        if key is not None:
            raise InvalidMessage("sharding_key and queue_id both set: give at most one")
        broker = row[self.broker_name] if self.broker_name is not None else None
        return QueueById(queue, broker)


def _one_of(index: dict[str, int], alias: str) -> int | None:
    """The position of the column named ``alias`` or of its RocketMQ name (at most one)."""
    name = ALIASES[alias]
    if name in index and alias in index:
        raise ColumnError(
            f"columns {name!r} and {alias!r} (Kafka's name for {name!r}) are both present: "
            "drop or rename one"
        )
    return index.get(name, index.get(alias))


def plan_rows(schema: StructType, topic: str | None, *, ignore_extra: bool = False) -> RowPlan:
    """Check ``schema`` and the default ``topic``; :class:`ColumnError` says what is wrong."""
    names = [f.name for f in schema.fields]
    index = {name: i for i, name in enumerate(names)}
    extra = [n for n in names if n not in KNOWN]
    if extra and not ignore_extra:
        raise ColumnError(
            f"unknown column(s) {extra}: the columns are {list(KNOWN)} "
            "(select them, or set ignoreExtraColumns)"
        )
    if ("body" in index) == ("value" in index):
        raise ColumnError("give exactly one of the columns 'body' and 'value'")
    for field in schema.fields:
        if field.name in KNOWN:
            _check(field.name, field.dataType)
    if "broker_name" in index and "queue_id" not in index:
        raise ColumnError("column 'broker_name' names the broker of a 'queue_id': add that one")
    if topic is not None:
        validate_topic(topic)
    elif "topic" not in index:
        raise ColumnError("no topic: set the 'topic' option or add a 'topic' column")
    body = _one_of(index, "value")
    assert body is not None
    _one_of(index, "key")  # (refuses both)
    keys, key = index.get("keys"), index.get("key")
    properties = _one_of(index, "headers")
    return RowPlan(
        body=body,
        body_is_text=isinstance(schema.fields[body].dataType, StringType),
        keys=keys,
        keys_is_list=keys is not None and isinstance(schema.fields[keys].dataType, ArrayType),
        key=key,
        tags=index.get("tags"),
        properties=properties,
        headers_are_kafka=properties is not None
        and _kafka_headers(schema.fields[properties].dataType),
        sharding_key=index.get("sharding_key"),
        topic=index.get("topic"),
        default_topic=topic,
        queue_id=index.get("queue_id"),
        broker_name=index.get("broker_name"),
        delay_level=index.get("delay_level"),
        deliver_at=index.get("deliver_at"),
    )
