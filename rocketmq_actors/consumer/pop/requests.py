"""What a POP consumer answers the broker (served by its mailbox actor, :mod:`.requests`).

| event | answer |
|---|---|
| ConsumerIdsChanged (40) | nothing to do: the brokers assign the messages, no rebalance |
| RunningInfoQuery (307) | subscriptions, properties (and the live tree of actors), no queues |

Anything else is answered REQUEST_CODE_NOT_SUPPORTED (a POP consumer has no offsets to reset
or report).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rocketmq_actors.cluster.requests import RequestServer
from rocketmq_actors.consumer.core.running_info import member_properties
from rocketmq_actors.logs import get_logger
from rocketmq_actors.protocol.bodies import encode_running_info
from rocketmq_actors.protocol.events import ConsumerIdsChanged, RunningInfoQuery
from rocketmq_actors.runtime.router import Inbound

if TYPE_CHECKING:
    from rocketmq_actors.consumer.pop.consumer import PopConsumer

__all__ = ["server"]

log = get_logger("rocketmq_actors.consumer")


def server(consumer: PopConsumer[Any]) -> RequestServer:
    def ids_changed(inbound: Inbound) -> None:
        log.debug("consumer.ids_changed", group=consumer.group)

    def running(inbound: Inbound) -> None:
        properties = member_properties(
            consumer, namesrv=consumer.instance.namesrv.addrs, consume_type="CONSUME_POP",
            started_ms=consumer.started_ms,
        )  # fmt: skip
        properties.update({
            "PROP_CONSUMEORDERLY": str(consumer.orderly).lower(),
            "PROP_THREADPOOL_CORE_SIZE": str(consumer.concurrency),
            "messageModel": "CLUSTERING",
            "consumeFromWhere": consumer.consume_from.value,
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
