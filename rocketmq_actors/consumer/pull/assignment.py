"""A pull consumer's assignment (queues revoked and started as the rebalancer, or ``assign``,
decides) and its answers to the broker's requests."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rocketmq_actors.cluster.requests import Handler
from rocketmq_actors.consumer.core.brokercalls import max_offset, min_offset
from rocketmq_actors.consumer.core.running_info import member_properties
from rocketmq_actors.consumer.pull.fetcher import Fetcher
from rocketmq_actors.logs import get_logger
from rocketmq_actors.protocol.bodies import (
    MessageQueue,
    encode_consumer_status,
    encode_running_info,
)
from rocketmq_actors.protocol.events import (
    BrokerRequest,
    ConsumerIdsChanged,
    ConsumerStatusQuery,
    RunningInfoQuery,
)

if TYPE_CHECKING:
    from rocketmq_actors.consumer.pull.consumer import PullConsumer

__all__ = ["change", "request_handlers", "running_info"]

log = get_logger("rocketmq_actors.consumer")


async def change(consumer: PullConsumer[Any], wanted: set[MessageQueue]) -> None:
    """Revoke what is no longer wanted (positions committed first, with auto-commit; the
    listener told), then start a fetcher for each new queue at its committed offset (or as
    ``auto_offset_reset`` says); the listener hears of the new ones."""
    revoked = set(consumer.fetchers) - wanted
    if revoked:
        if consumer.auto_commit:
            await consumer.commit({q: consumer.position(q) for q in revoked})
        if consumer.listener is not None:
            await consumer.listener.on_queues_revoked(consumer.app_queues(revoked))
        for queue in revoked:
            await consumer.fetchers.stop(queue)
            consumer.offsets.remove(queue)
    added = wanted - set(consumer.fetchers)
    for queue in sorted(added):
        committed = await consumer.offsets.fetch_start(queue)
        if committed is None or committed < 0:
            committed = await (
                min_offset if consumer.auto_offset_reset.value == "earliest" else max_offset
            )(consumer.instance, queue)
        await consumer.fetchers.start(Fetcher(consumer, queue, committed, paused=False))
    if added and consumer.listener is not None:
        await consumer.listener.on_queues_assigned(consumer.app_queues(added))
    if revoked or added:
        log.info("consumer.assignment_changed", group=consumer.group,
                 queues=len(consumer.fetchers), added=len(added), revoked=len(revoked))  # fmt: skip


def running_info(consumer: PullConsumer[Any]) -> bytes:
    """GET_CONSUMER_RUNNING_INFO for a lite-pull member (what Java's lite pull consumer
    reports: its subscriptions, properties, and each assigned queue's position)."""
    queues = {
        f.queue: {"commitOffset": consumer.offsets.read(f.queue) or 0,
                  "cachedMsgCount": len(f.records), "droped": False}
        for f in consumer.fetchers.actors()
    }  # fmt: skip
    properties = member_properties(
        consumer, namesrv=consumer.instance.namesrv.addrs, consume_type="CONSUME_ACTIVELY",
        started_ms=consumer.started_ms,
    )  # fmt: skip
    properties["messageModel"] = "CLUSTERING"
    return encode_running_info(
        properties=properties,
        subscriptions=[s.wire(consumer.sub_version) for s in consumer.subscriptions()],
        queue_offsets=queues,
    )


def request_handlers(consumer: PullConsumer[Any]) -> dict[type[BrokerRequest], Handler]:
    """What a lite-pull member answers, as Java's lite pull consumer does: the group changed
    (rebalance now), GET_CONSUMER_STATUS_FROM_CLIENT (an empty table), and running info."""
    return {
        ConsumerIdsChanged: lambda inbound: consumer.rebalancer.trigger(),
        ConsumerStatusQuery: lambda inbound: inbound.reply(body=encode_consumer_status({})),
        RunningInfoQuery: lambda inbound: inbound.reply(body=running_info(consumer)),
    }
