"""A push consumer that follows the broker's request mode (``PushOptions(client_rebalance=
False)``, Java's ``setClientRebalance(false)``): its queues come from QUERY_ASSIGNMENT, and a
queue assigned in POP mode is popped rather than pulled.

An operator switches a group between PULL and POP per topic (``admin.set_message_request_mode``,
``mqadmin setConsumeMode``); each rebalance round asks a broker of every subscribed topic for
this member's assignment (:func:`..core.assignment.queried`). The PULL queues go to the queue
actors as a client-side allocation's would (:mod:`.ownership`); the POP ones to this module's
:class:`PopLane`: a ``popper`` actor per assigned queue (:mod:`..pop.popper`; queue id -1 means
every queue of that broker), the POP consume service and the acker, under the consumer's
supervision tree, calling the consumer's handler through its dispatcher. What a handler's
outcome means for a popped message is the POP consumer's (:mod:`..pop.service`): acked, made
invisible for Java's pop retry delays, or dead-lettered.

As Java does, a topic assigned only PULL queues also subscribes its POP retry topic
(``%RETRY%<group>_<topic>``), so that what was popped and not acked before a switch to PULL is
still consumed; a topic assigned POP queues drops it. Orderly and broadcasting consumers keep
the client-side allocation (Java's ``RebalancePushImpl.clientRebalance``).

Nothing else changes at a switch: a PULL queue released commits its offset, the broker's POP
starts from it; a popped message not acked when its popper stops becomes visible again after
its invisible time and is delivered to whichever member then has it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any, Protocol

import anyio

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.cluster.member import MEMBER_POLICY
from rocketmq_actors.cluster.options import ClientOptions
from rocketmq_actors.cluster.routes import TopicRoute
from rocketmq_actors.consumer.core.assignment import queried
from rocketmq_actors.consumer.core.dispatch import Dispatcher
from rocketmq_actors.consumer.core.rebalance import Strategy
from rocketmq_actors.consumer.core.subscriptions import Subscription
from rocketmq_actors.consumer.pop.acks import Acker
from rocketmq_actors.consumer.pop.calls import check_pop_broker
from rocketmq_actors.consumer.pop.popper import Popper, PopSettings, init_mode
from rocketmq_actors.consumer.pop.service import PopConsumeService, PopOwner
from rocketmq_actors.consumer.push.options import PushOptions
from rocketmq_actors.logs import get_logger
from rocketmq_actors.protocol.assignment import POP, PULL
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.runtime.supervisor import ChildSpec, DynamicSupervisor, Restart
from rocketmq_actors.runtime.tree import Node

__all__ = ["PopLane", "check_broker_mode", "pop_lane", "pop_retry_topic"]

log = get_logger("rocketmq_actors.consumer")

#: Java's DefaultMQPushConsumer defaults for the ack batching of its POP mode
ACK_BATCH_SIZE, ACK_INTERVAL = 32, 0.2


def pop_retry_topic(topic: str, group: str) -> str:
    """Where the broker keeps ``group``'s failed POP messages of ``topic`` (Java's
    ``KeyBuilder.buildPopRetryTopic``, as its push consumer names it)."""
    return f"%RETRY%{group}_{topic}"


class LaneOwner(PopOwner, Protocol):
    dispatcher: Dispatcher
    value_deserializer: Callable[[bytes], Any] | None

    @property
    def instance(self) -> ClientInstance: ...
    async def wait_flow(self) -> None: ...
    def subscription(self, topic: str) -> Subscription: ...
    def follow_subscription(self, topic: str, wanted: bool, *, of: str) -> None: ...


class PopLane:
    """The POP half of a push consumer that follows the broker's mode: the assignment asked of
    the broker (:meth:`allocate`, the rebalancer's), and the poppers of its POP queues."""

    def __init__(
        self,
        owner: LaneOwner,
        dispatcher: Dispatcher,
        settings: PopSettings,
        *,
        strategy: str,
        model: str,
        concurrency: int,
        consume_batch_size: int,
        value_deserializer: Callable[[bytes], Any] | None,
        shutdown_timeout: float,
    ) -> None:
        self.owner = owner
        self.strategy, self.model = strategy, model
        self.acker = Acker(owner.instance, owner.group, batch_size=ACK_BATCH_SIZE,
                           interval=ACK_INTERVAL)  # fmt: skip
        self.service = PopConsumeService(owner, dispatcher, self.acker, concurrency=concurrency,
                                         consume_batch_size=consume_batch_size,
                                         orderly=False)  # fmt: skip
        self.popper = Popper(owner, settings, self.service, self.acker, value_deserializer)
        self.poppers = DynamicSupervisor("pop-lane", MEMBER_POLICY,
                                         shutdown_timeout=shutdown_timeout)  # fmt: skip
        self.assigned: dict[str, set[MessageQueue]] = {}  # topic -> its POP queues, as told
        self.running: set[MessageQueue] = set()

    def child_specs(self) -> list[ChildSpec[Any]]:
        """The lane's own actors, started beside the consumer's other actors."""
        return [ChildSpec("pop-consume", self.service.run, Restart.PERMANENT,
                          kind="consume-service"),
                ChildSpec("pop-acks", self.acker.run, Restart.PERMANENT,
                          kind="pop-acker")]  # fmt: skip

    async def allocate(self, topic: str) -> list[MessageQueue]:
        """This member's PULL queues of ``topic`` (the POP ones are kept for :meth:`apply`)."""
        found = await queried(self.owner.instance, self.owner.group, topic, self.strategy,
                              self.model)  # fmt: skip
        pop = {a.queue for a in found if a.mode == POP}
        pull = [a.queue for a in found if a.mode == PULL]
        if pop != self.assigned.get(topic, set()):
            log.info("consumer.assignment_changed", group=self.owner.group, topic=topic,
                     pull=len(pull), pop=len(pop))  # fmt: skip
        self.assigned[topic] = pop
        if not topic.startswith("%RETRY%"):  # (Java: only a switch of both sides moves it)
            retry = pop_retry_topic(topic, self.owner.group)
            if pull and not pop:
                self.owner.follow_subscription(retry, True, of=topic)
            elif pop and not pull:
                self.owner.follow_subscription(retry, False, of=topic)
        return pull

    @property
    def queues(self) -> set[MessageQueue]:
        return set(self.running)

    async def apply(self, topics: Iterable[str]) -> None:
        """Pop what the last answers for ``topics`` assigned; stop popping the rest."""
        current = set(topics)
        for topic in list(self.assigned):
            if topic not in current:
                del self.assigned[topic]
        wanted = set().union(*self.assigned.values()) if self.assigned else set()
        for queue in sorted(self.running - wanted):
            self.poppers.terminate_child(queue)
            self.running.discard(queue)
            log.info("consumer.pop.queue_released", group=self.owner.group, queue=str(queue))
        for queue in sorted(wanted - self.running):
            if self.owner.stopping:
                return
            run = functools.partial(self.popper.run, queue.topic, queue.broker_name,
                                    queue.queue_id)  # fmt: skip
            await self.poppers.start_child(ChildSpec(queue, run, Restart.PERMANENT,
                                                     kind="popper"))  # fmt: skip
            self.running.add(queue)
            log.info("consumer.pop.queue_assigned", group=self.owner.group, queue=str(queue))

    def drop(self, topic: str) -> None:
        """``topic`` was unsubscribed: its poppers end now."""
        self.assigned.pop(topic, None)
        for queue in [q for q in self.running if q.topic == topic]:
            self.poppers.terminate_child(queue)
            self.running.discard(queue)

    def stop(self) -> None:
        """Pop no more (the consumer stops): every popper ends now."""
        for queue in self.running:
            self.poppers.terminate_child(queue)
        self.running.clear()

    async def flush(self, seconds: float) -> None:
        """Ack what the handlers acked, within ``seconds`` (after they stopped)."""
        with anyio.CancelScope(shield=True), anyio.move_on_after(max(0.0, seconds)):
            await self.acker.flush()

    def describe(self) -> Node:
        node = self.poppers.describe()
        return Node(name="pop-lane", kind="pop-lane", children=node.children,
                    info={"pops": self.popper.pops, "pop_errors": self.popper.errors,
                          "acked": self.acker.acked, "retried": self.service.retried,
                          "dead": self.service.dead})  # fmt: skip


def pop_lane(owner: LaneOwner, options: PushOptions, client: ClientOptions) -> PopLane:
    """The lane of a push consumer with ``options.broker_mode``."""
    settings = PopSettings(
        batch_size=options.pop_batch_size, max_cached=options.max_cached_messages,
        invisible_time=options.pop_invisible_time, poll_time=options.pull_suspend,
        orderly=False, request_timeout=client.request_timeout,
        init_mode=init_mode(options.consume_from), max_body=options.max_body_size,
    )  # fmt: skip
    strategy = options.strategy
    assert isinstance(strategy, Strategy)  # (PushOptions allows only the broker's two)
    return PopLane(
        owner, owner.dispatcher, settings, strategy=strategy.value, model=options.model.value,
        concurrency=options.concurrency, consume_batch_size=options.consume_batch_size,
        value_deserializer=owner.value_deserializer, shutdown_timeout=client.shutdown_timeout,
    )  # fmt: skip


async def check_broker_mode(instance: ClientInstance, route: TopicRoute, timeout: float) -> None:
    """:class:`~rocketmq_actors.errors.UnsupportedByBroker` when a broker of ``route`` is
    4.x: it has no request modes (a Java member there rebalances nothing)."""
    for name in sorted(route.brokers):
        addr = route.node_addr(name, master_only=False)
        if addr is None:
            continue
        await check_pop_broker(
            instance, addr, timeout, "client_rebalance=False (the broker's request mode)"
        )
