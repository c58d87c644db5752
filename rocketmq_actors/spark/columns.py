"""DataFrame columns -> RocketMQ messages: checked once against the schema (on the driver,
before any task runs), then applied to every row.

| column | Spark type | message |
|---|---|---|
| ``body`` or ``value`` (one of them, required) | binary or string (UTF-8) | body |
| ``keys`` | string or array<string> | keys (for de-duplication downstream) |
| ``tags`` | string | tags |
| ``properties`` | map<string,string> | user properties |
| ``sharding_key`` | string | queue choice: same key, same queue, in order |
| ``topic`` | string | per-row topic (else the ``topic`` option) |

Any other column is refused unless ``ignore_extra`` is set: a misspelt ``tag`` column would
otherwise vanish silently.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    MapType,
    StringType,
    StructType,
)

from rocketmq_actors.names import validate_topic
from rocketmq_actors.producer import Message

__all__ = ["ColumnError", "RowPlan", "plan_rows"]

KNOWN = ("body", "value", "keys", "tags", "properties", "sharding_key", "topic")


class ColumnError(ValueError):
    """The DataFrame's columns cannot be turned into messages."""


def _is_string(kind: DataType) -> bool:
    return isinstance(kind, StringType)


def _check(name: str, kind: DataType) -> None:
    ok = {
        "body": isinstance(kind, BinaryType | StringType),
        "value": isinstance(kind, BinaryType | StringType),
        "keys": _is_string(kind) or (isinstance(kind, ArrayType) and _is_string(kind.elementType)),
        "tags": _is_string(kind),
        "properties": isinstance(kind, MapType)
        and _is_string(kind.keyType)
        and _is_string(kind.valueType),
        "sharding_key": _is_string(kind),
        "topic": _is_string(kind),
    }[name]
    if not ok:
        wanted = {
            "body": "binary or string",
            "value": "binary or string",
            "keys": "string or array<string>",
            "properties": "map<string,string>",
        }.get(name, "string")
        raise ColumnError(f"column {name!r} is {kind.simpleString()}, expected {wanted}")


@attrs.frozen
class RowPlan:
    """Where each message field sits in a row (by position)."""

    body: int
    body_is_text: bool
    keys: int | None
    keys_is_list: bool
    tags: int | None
    properties: int | None
    sharding_key: int | None
    topic: int | None
    default_topic: str | None

    def to_message(self, row: Sequence[Any]) -> tuple[Message, str | None]:
        """The message of one row and its sharding key; ``ValueError`` for a row that cannot
        be one (null body or topic, a bad topic name, ...)."""
        body = row[self.body]
        if body is None:
            raise ValueError("body is null")
        if self.body_is_text:
            body = body.encode()
        topic = row[self.topic] if self.topic is not None else None
        topic = topic or self.default_topic
        if not topic:
            raise ValueError("topic is null and no topic option was given")
        keys: list[str] = []
        if self.keys is not None and row[self.keys] is not None:
            raw = row[self.keys]
            keys = [k for k in raw if k] if self.keys_is_list else [raw]
        properties: Mapping[str, str] = {}
        if self.properties is not None and row[self.properties] is not None:
            properties = dict(row[self.properties])
        message = Message(
            topic=topic,
            body=bytes(body),
            keys=keys,
            tags=row[self.tags] if self.tags is not None else None,
            properties=properties,
        )
        return message, row[self.sharding_key] if self.sharding_key is not None else None


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
    if topic is not None:
        validate_topic(topic)
    elif "topic" not in index:
        raise ColumnError("no topic: set the 'topic' option or add a 'topic' column")
    body = index.get("body", index.get("value"))
    assert body is not None
    keys = index.get("keys")
    return RowPlan(
        body=body,
        body_is_text=isinstance(schema.fields[body].dataType, StringType),
        keys=keys,
        keys_is_list=keys is not None and isinstance(schema.fields[keys].dataType, ArrayType),
        tags=index.get("tags"),
        properties=index.get("properties"),
        sharding_key=index.get("sharding_key"),
        topic=index.get("topic"),
        default_topic=topic,
    )
