"""What a push consumer's collaborators call on its actor group (:mod:`.group`): each receives
the group as one of these narrow interfaces, never the group nor the public class.

* :class:`OwnershipPort`: :mod:`.ownership` (starting, releasing and moving queues), which also
  builds the queue actors (:class:`~..core.queues.QueueOwner`);
* :class:`RequestsPort`: :mod:`.requests` (the broker's requests for the group).

The consume services state theirs beside them (``ConcurrentOwner``, ``OrderlyOwner``), as
do the lag gauges (``LagOwner``) and the queue actors (``QueueOwner``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

import anyio

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.consumer.core.dispatch import Dispatcher
from rocketmq_actors.consumer.core.offsets import OffsetStore
from rocketmq_actors.consumer.core.process_queue import ProcessQueue
from rocketmq_actors.consumer.core.queues import QueueActor, QueueOwner, QueueTable
from rocketmq_actors.consumer.core.subscriptions import Subscription
from rocketmq_actors.consumer.push.options import PushOptions
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.records import MessageExt
from rocketmq_actors.runtime.mailbox import Mailbox
from rocketmq_actors.runtime.router import Inbound
from rocketmq_actors.runtime.tree import Node

__all__ = ["OwnershipPort", "RequestsPort"]


class OwnershipPort(QueueOwner, Protocol):
    """What :class:`~.ownership.Ownership` reads and calls."""

    @property
    def options(self) -> PushOptions: ...
    @property
    def consume_timestamp_ms(self) -> int | None: ...
    @property
    def queues(self) -> QueueTable[QueueActor]: ...
    @property
    def stopping(self) -> bool: ...
    @property
    def on_rebalance(self) -> Callable[[list[MessageQueue]], None] | None: ...
    def assigned(self) -> list[MessageQueue]: ...
    @property
    def rebalance_lock(self) -> anyio.Lock: ...
    def rebalance_later(self, delay: float) -> None: ...


class RequestsPort(Protocol):
    """What the mailbox actor's handlers (:mod:`.requests`) read and call."""

    @property
    def group(self) -> str: ...
    @property
    def mailbox(self) -> Mailbox[Inbound]: ...
    @property
    def instance(self) -> ClientInstance: ...
    @property
    def options(self) -> PushOptions: ...
    @property
    def offsets(self) -> OffsetStore: ...
    @property
    def dispatcher(self) -> Dispatcher: ...
    @property
    def started_ms(self) -> int: ...
    @property
    def sub_version(self) -> int: ...
    @property
    def consumed(self) -> int: ...
    @property
    def failed(self) -> int: ...
    def owned_queues(self) -> dict[MessageQueue, ProcessQueue]: ...
    def subscriptions(self) -> list[Subscription]: ...
    def deserialize(self, messages: Sequence[MessageExt]) -> None: ...
    def rebalance_now(self) -> None: ...
    async def move_offsets(self, targets: Mapping[MessageQueue, int]) -> list[MessageQueue]: ...
    def tree(self) -> Node: ...
