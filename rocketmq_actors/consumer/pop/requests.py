"""What a POP consumer answers the broker (served by its mailbox actor, :mod:`.requests`).

| event | answer |
|---|---|
| ConsumerIdsChanged (40) | nothing to do: the brokers assign the messages, no rebalance |
| RunningInfoQuery (307) | subscriptions, properties (and the live tree of actors), no queues |

Anything else is answered REQUEST_CODE_NOT_SUPPORTED (a POP consumer has no offsets to reset
or report).
"""

from __future__ import annotations

from typing import Any, Protocol

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.cluster.requests import RequestServer
from rocketmq_actors.consumer.core.running_info import member_properties
from rocketmq_actors.consumer.core.subscriptions import Subscription
from rocketmq_actors.consumer.pop.options import PopOptions
from rocketmq_actors.logs import get_logger
from rocketmq_actors.protocol.bodies import encode_running_info
from rocketmq_actors.protocol.events import ConsumerIdsChanged, RunningInfoQuery
from rocketmq_actors.runtime.mailbox import Mailbox
from rocketmq_actors.runtime.router import Inbound
from rocketmq_actors.runtime.tree import Node

__all__ = ["PopMember", "server"]

log = get_logger("rocketmq_actors.consumer")


class PopMember(Protocol):
    """What the mailbox reads of its POP consumer's group."""

    group: str
    mailbox: Mailbox[Inbound]
    options: PopOptions
    started_ms: int

    @property
    def instance(self) -> ClientInstance: ...
    def subscriptions(self) -> list[Subscription]: ...
    def statistics(self) -> dict[str, Any]: ...
    def tree(self) -> Node: ...


def server(consumer: PopMember) -> RequestServer:
    def ids_changed(inbound: Inbound) -> None:
        log.debug("consumer.ids_changed", group=consumer.group)

    def running(inbound: Inbound) -> None:
        properties = member_properties(
            consumer, namesrv=consumer.instance.namesrv.addrs, consume_type="CONSUME_POP",
            started_ms=consumer.started_ms,
        )  # fmt: skip
        properties.update({
            "PROP_CONSUMEORDERLY": str(consumer.options.orderly).lower(),
            "PROP_THREADPOOL_CORE_SIZE": str(consumer.options.concurrency),
            "messageModel": "CLUSTERING",
            "consumeFromWhere": consumer.options.consume_from.value,
            **{k: str(v) for k, v in consumer.statistics().items()},
        })  # fmt: skip
        body = encode_running_info(
            properties=properties,
            subscriptions=[s.wire(0) for s in consumer.subscriptions()],
            queue_offsets={},
        )
        inbound.reply(body=body)

    return RequestServer(
        consumer.group, consumer.mailbox,
        {ConsumerIdsChanged: ids_changed, RunningInfoQuery: running},
    )  # fmt: skip
