"""One row's values as message fields, for :class:`~rocketmq_actors.spark.columns.RowPlan`: a
row whose value cannot be one fails alone with :class:`InvalidMessage` saying why."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from rocketmq_actors.errors import InvalidMessage
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.messages import Message

__all__ = ["QueueById", "epoch_ms", "header_properties", "text"]


def text(what: str, value: str | bytes | bytearray) -> str:
    """``value`` as text: a string as it is, bytes decoded as UTF-8 (else the row fails)."""
    if isinstance(value, str):
        return value
    try:
        return bytes(value).decode()
    except UnicodeDecodeError as exc:
        raise InvalidMessage(f"{what} is not UTF-8 text: {exc}") from None


def header_properties(headers: Iterable[Sequence[Any]]) -> dict[str, str]:
    """Kafka's headers (a list of ``(key, value)`` structs) as user properties. Kafka allows a
    header twice and a null value; a property map does not: such a row fails, nothing is
    dropped silently."""
    properties: dict[str, str] = {}
    for key, value in headers:
        if key is None or value is None:
            raise InvalidMessage(f"header {key!r} has a null key or value")
        if key in properties:
            raise InvalidMessage(f"header {key!r} is given twice")
        properties[key] = text(f"header {key!r}", value)
    return properties


def epoch_ms(at: dt.datetime | int) -> int:
    """``deliver_at`` as epoch milliseconds. PySpark hands a ``timestamp`` to Python as a naive
    datetime in the worker's local time zone (``TimestampType.fromInternal``), which
    ``datetime.timestamp`` reads back as local time: the same instant."""
    if isinstance(at, dt.datetime):
        return round(at.timestamp() * 1000)
    if at < 0:
        raise InvalidMessage(f"deliver_at {at} is before 1970 (epoch milliseconds expected)")
    return int(at)


@attrs.frozen
class QueueById:
    """The queue selector of a row's ``queue_id``: the topic's writable queue of that id, on
    ``broker_name``'s broker when the row names one, else on the first broker (by name) that
    has it. A queue the route does not have fails the send with the topic's queues in the
    reason."""

    queue_id: int
    broker_name: str | None = None

    def __call__(
        self, queues: Sequence[MessageQueue], message: Message, arg: object
    ) -> MessageQueue:
        for queue in queues:
            if queue.queue_id == self.queue_id and self.broker_name in (None, queue.broker_name):
                return queue
        where = f" on broker {self.broker_name!r}" if self.broker_name is not None else ""
        raise InvalidMessage(
            f"queue_id {self.queue_id}{where} is not a writable queue of topic "
            f"{message.topic!r}; it has {_describe(queues)}"
        )


def _describe(queues: Sequence[MessageQueue]) -> str:
    by_broker: dict[str, list[int]] = {}
    for queue in queues:
        by_broker.setdefault(queue.broker_name, []).append(queue.queue_id)
    return ", ".join(
        f"{broker}: queues {min(ids)}..{max(ids)}" for broker, ids in sorted(by_broker.items())
    )
