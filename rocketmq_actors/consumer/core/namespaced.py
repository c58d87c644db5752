"""A consumer's namespace at its API: queues and messages as the application names them
(``orders``), on the wire wrapped (``ns%orders``), as the Java client's ``withNamespace`` /
``withoutNamespace`` / ``queueWithNamespace`` do. Without a namespace, everything as it is."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TypeVar

from rocketmq_actors.names import unwrap, wrap
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.records import MessageExt

__all__ = ["Namespace"]

V = TypeVar("V")


class Namespace:
    __slots__ = ("name",)

    def __init__(self, name: str | None) -> None:
        self.name = name or None

    def wire(self, queue: MessageQueue) -> MessageQueue:
        if self.name is None:
            return queue
        return MessageQueue(wrap(self.name, queue.topic), queue.broker_name, queue.queue_id)

    def app(self, queue: MessageQueue) -> MessageQueue:
        if self.name is None:
            return queue
        return MessageQueue(unwrap(self.name, queue.topic), queue.broker_name, queue.queue_id)

    def wire_all(self, queues: Iterable[MessageQueue]) -> list[MessageQueue]:
        return [self.wire(q) for q in queues]

    def app_set(self, queues: Iterable[MessageQueue]) -> set[MessageQueue]:
        return {self.app(q) for q in queues}

    def wire_keys(self, mapping: Mapping[MessageQueue, V]) -> dict[MessageQueue, V]:
        return {self.wire(q): v for q, v in mapping.items()}

    def app_messages(self, messages: Iterable[MessageExt]) -> None:
        """Strip the namespace from the messages' topics, in place (they go to the app)."""
        if self.name is not None:
            for message in messages:
                message.topic = unwrap(self.name, message.topic)

    def app_records(
        self, records: Mapping[MessageQueue, list[MessageExt]]
    ) -> dict[MessageQueue, list[MessageExt]]:
        if self.name is None:
            return dict(records)
        for batch in records.values():
            self.app_messages(batch)
        return {self.app(q): batch for q, batch in records.items()}
