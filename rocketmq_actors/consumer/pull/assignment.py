"""A pull consumer's assignment (queues revoked and started as the rebalancer, ``assign`` or
``unsubscribe`` decides) and its answers to the broker's requests.

These work on the consumer's actor group through :class:`AssignmentOwner`, the ports they use
(the group itself passes them; nothing here imports it)."""

from __future__ import annotations

from typing import Protocol

from rocketmq_actors.cluster.requests import Handler
from rocketmq_actors.consumer.core.brokercalls import max_offset, min_offset
from rocketmq_actors.consumer.core.namespaced import Namespace
from rocketmq_actors.consumer.core.offsets import OffsetStore
from rocketmq_actors.consumer.core.queues import QueueTable
from rocketmq_actors.consumer.core.rebalancer import Rebalancer
from rocketmq_actors.consumer.core.running_info import member_properties
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
from rocketmq_actors.runtime.tree import Node

from .commits import Committer
from .fetcher import Fetcher, FetchOwner
from .options import OffsetReset, PullOptions
from .subscription import SubscriptionState

__all__ = ["AssignmentOwner", "change", "request_handlers", "running_info"]

log = get_logger("rocketmq_actors.consumer")


class AssignmentOwner(FetchOwner, Protocol):
    """What the assignment reads and moves of its pull consumer's group."""

    options: PullOptions
    subs: SubscriptionState
    ns: Namespace
    fetchers: QueueTable[Fetcher]
    offsets: OffsetStore
    committer: Committer
    rebalancer: Rebalancer
    started_ms: int

    def tree(self) -> Node: ...


async def change(owner: AssignmentOwner, wanted: set[MessageQueue]) -> None:
    """Revoke what is no longer wanted (positions committed first, with auto-commit; the
    listener told), then start a fetcher for each new queue at its committed offset (or as
    ``auto_offset_reset`` says); the listener hears of the new ones."""
    listener = owner.subs.listener
    revoked = set(owner.fetchers) - wanted
    if revoked:
        if owner.options.auto_commit:
            await owner.committer.commit(
                {f.queue: f.position for q in revoked if (f := owner.fetchers.lookup(q))}
            )
        if listener is not None:
            await listener.on_queues_revoked(owner.ns.app_set(revoked))
        for queue in revoked:
            await owner.fetchers.stop(queue)
            owner.offsets.remove(queue)
    added = wanted - set(owner.fetchers)
    for queue in sorted(added):
        committed = await owner.offsets.fetch_start(queue)
        if committed is None or committed < 0:
            earliest = owner.options.auto_offset_reset is OffsetReset.EARLIEST
            committed = await (min_offset if earliest else max_offset)(owner.instance, queue)
        await owner.fetchers.start(Fetcher(owner, queue, committed, paused=False))
    if added and listener is not None:
        await listener.on_queues_assigned(owner.ns.app_set(added))
    if revoked or added:
        log.info("consumer.assignment_changed", group=owner.group,
                 queues=len(owner.fetchers), added=len(added), revoked=len(revoked))  # fmt: skip


def running_info(owner: AssignmentOwner) -> bytes:
    """GET_CONSUMER_RUNNING_INFO for a lite-pull member (what Java's lite pull consumer
    reports: its subscriptions, properties, and each assigned queue's position)."""
    queues = {
        f.queue: {"commitOffset": owner.offsets.read(f.queue) or 0,
                  "cachedMsgCount": len(f.records), "droped": False}
        for f in owner.fetchers.actors()
    }  # fmt: skip
    properties = member_properties(
        owner, namesrv=owner.instance.namesrv.addrs, consume_type="CONSUME_ACTIVELY",
        started_ms=owner.started_ms,
    )  # fmt: skip
    properties["messageModel"] = "CLUSTERING"
    return encode_running_info(
        properties=properties,
        subscriptions=[s.wire(owner.subs.version) for s in owner.subs.table.values()],
        queue_offsets=queues,
    )


def request_handlers(owner: AssignmentOwner) -> dict[type[BrokerRequest], Handler]:
    """What a lite-pull member answers, as Java's lite pull consumer does: the group changed
    (rebalance now), GET_CONSUMER_STATUS_FROM_CLIENT (an empty table), and running info."""
    return {
        ConsumerIdsChanged: lambda inbound: owner.rebalancer.trigger(),
        ConsumerStatusQuery: lambda inbound: inbound.reply(body=encode_consumer_status({})),
        RunningInfoQuery: lambda inbound: inbound.reply(body=running_info(owner)),
    }
