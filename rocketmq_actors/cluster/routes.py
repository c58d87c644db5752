"""Topic routes: publish and subscribe queue views, refreshed periodically and on demand.

A route that was fetched once keeps serving while every NameServer is down: refresh failures
are logged and the cached route stays. Concurrent ``get`` calls for an uncached topic share one
NameServer request.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Mapping

import anyio
import attrs
from anyio.abc import TaskStatus

from rocketmq_actors.errors import BrokerError, RocketMQError, TopicNotFound
from rocketmq_actors.logs import get_logger
from rocketmq_actors.protocol.bodies import (
    MASTER_ID,
    PERM_READ,
    PERM_WRITE,
    BrokerData,
    MessageQueue,
    TopicRouteData,
    parse_order_topic_conf,
)
from rocketmq_actors.protocol.codes import ResponseCode
from rocketmq_actors.runtime.tree import Node

from .namesrv import NameServerClient

__all__ = ["TEMPLATE_TOPIC", "RouteTable", "TopicRoute"]

#: the topic whose route producers borrow to auto-create a topic (Java's TBW102)
TEMPLATE_TOPIC = "TBW102"

log = get_logger("rocketmq_actors.cluster")

#: a topic marked stale is fetched again at most this often: a send loop failing on a dead
#: master marks it on every attempt, and the NameServer must not see one lookup per attempt
STALE_REFRESH_SPACING = 1.0


@attrs.frozen
class TopicRoute:
    topic: str
    data: TopicRouteData
    publish_queues: tuple[MessageQueue, ...]
    subscribe_queues: tuple[MessageQueue, ...]
    brokers: Mapping[str, BrokerData]
    auto_created: bool = False  # derived from the template topic; the broker will create it

    @classmethod
    def from_data(cls, topic: str, data: TopicRouteData) -> TopicRoute:
        brokers = {b.broker_name: b for b in data.broker_datas}
        publish: list[MessageQueue] = []
        if data.order_topic_conf:
            for name, count in parse_order_topic_conf(data.order_topic_conf):
                publish += (MessageQueue(topic, name, i) for i in range(count))
        else:
            for q in sorted(data.queue_datas, key=lambda q: q.broker_name):
                broker = brokers.get(q.broker_name)
                if q.perm & PERM_WRITE and broker is not None and broker.master_addr:
                    publish += (
                        MessageQueue(topic, q.broker_name, i) for i in range(q.write_queue_nums)
                    )
        subscribe = [
            MessageQueue(topic, q.broker_name, i)
            for q in data.queue_datas
            if q.perm & PERM_READ
            for i in range(q.read_queue_nums)
        ]
        return cls(topic, data, tuple(publish), tuple(sorted(subscribe)), brokers)

    def master_addr(self, broker_name: str) -> str | None:
        broker = self.brokers.get(broker_name)
        return broker.broker_addrs.get(MASTER_ID) if broker else None

    def node_addr(
        self, broker_name: str, *, master_only: bool, broker_id: int = MASTER_ID
    ) -> str | None:
        """The address of one node of ``broker_name``: node ``broker_id`` (the master unless
        told otherwise), or - when ``master_only`` is false (what slaves serve too: Java's
        findBrokerAddressInSubscribe) and that node is gone - the master, else the lowest-id
        slave. None when there is no such node."""
        broker = self.brokers.get(broker_name)
        addrs = broker.broker_addrs if broker is not None else {}
        addr = addrs.get(broker_id) if not master_only else None
        addr = addr or addrs.get(MASTER_ID)
        if addr is None and not master_only and addrs:
            addr = addrs[min(addrs)]
        return addr

    def masters(self) -> list[tuple[str, str]]:
        """``(broker name, master address)`` of every broker with a master, by name."""
        pairs = ((name, self.master_addr(name)) for name in sorted(self.brokers))
        return [(name, addr) for name, addr in pairs if addr is not None]

    @classmethod
    def from_template(cls, topic: str, template: TopicRouteData, queues: int) -> TopicRoute:
        """The route to use for a topic the NameServer does not know yet: the template topic's
        brokers (TBW102), ``min(queues, readQueueNums)`` queues each; sending with
        ``defaultTopic`` set makes a broker with autoCreateTopicEnable create the topic."""
        data = attrs.evolve(
            template,
            queue_datas=tuple(
                attrs.evolve(
                    q,
                    read_queue_nums=min(queues, q.read_queue_nums),
                    write_queue_nums=min(queues, q.read_queue_nums),
                )
                for q in template.queue_datas
            ),
        )
        return attrs.evolve(cls.from_data(topic, data), auto_created=True)


class RouteTable:
    def __init__(self, namesrv: NameServerClient, *, refresh_interval: float = 30.0) -> None:
        self.namesrv = namesrv
        self.refresh_interval = refresh_interval
        self._routes: dict[str, TopicRoute] = {}
        #: ``cached(topic)``: the cached route, or None (the dictionary's own ``get``: no frame
        #: of ours on the send path)
        self.cached: Callable[[str], TopicRoute | None] = self._routes.get
        self._locks: dict[str, anyio.Lock] = {}
        self._fetched: dict[str, float] = {}  # topic -> time.monotonic() of its last lookup
        self._stale: set[str] = set()  # topics to fetch before the next interval
        self._wake = anyio.Event()
        self._lookups = itertools.count()  # every route lookup's place in start order
        self._stored: dict[str, int] = {}  # topic -> the place of the lookup now cached

    def age(self, topic: str) -> float | None:
        """Seconds since ``topic``'s route was last fetched (a route served from the cache
        while the NameServers are down grows old), None if it is not known."""
        fetched = self._fetched.get(topic)
        return None if fetched is None else time.monotonic() - fetched

    def topics(self) -> list[str]:
        return list(self._routes)

    async def get(
        self, topic: str, *, template: str | None = None, template_queues: int = 4
    ) -> TopicRoute:
        """The route of ``topic``; if the NameServer knows none and ``template`` is given, a
        route derived from the template topic's (see :meth:`TopicRoute.from_template`)."""
        route = self._routes.get(topic)
        if route is not None:
            return route
        lock = self._locks.setdefault(topic, anyio.Lock())
        async with lock:
            route = self._routes.get(topic)
            if route is not None:
                return route
            try:
                return await self.refresh(topic)
            except TopicNotFound:
                if template is None:
                    raise
            try:
                base = await self.get(template)
            except TopicNotFound:  # the broker would not create it either: name the topic
                raise TopicNotFound(
                    topic,
                    f"nor for {template!r}, the template a broker creates topics from "
                    "(autoCreateTopicEnable is off): create the topic",
                ) from None
            route = TopicRoute.from_template(topic, base.data, template_queues)
            self._routes[topic] = route
            self._fetched[topic] = time.monotonic()
            log.info("route.auto_create", topic=topic, template=template)
            return route

    def _latest(self, topic: str, place: int) -> bool:
        """Whether the answer to lookup ``place`` of ``topic`` is the newest yet (then it is
        recorded as the one cached): no lookup started after it has answered."""
        if self._stored.get(topic, -1) > place:
            return False
        self._stored[topic] = place
        return True

    async def refresh(self, topic: str) -> TopicRoute:
        """Fetch the route now; on failure keep serving a cached one if there is one. Of two
        lookups of one topic at once (the refresher's and a caller's), the answer to the one
        started last is kept, whichever arrives last: an older answer never replaces it."""
        place = next(self._lookups)
        try:
            data = await self.namesrv.topic_route(topic)
        except TopicNotFound:
            cached = self._routes.get(topic)
            if cached is not None and cached.auto_created:
                return cached  # not registered yet: keep sending through the template's brokers
            if not self._latest(topic, place):
                raise  # (a later lookup answered: its route, if any, stays)
            if self._routes.pop(topic, None) is not None:
                self._fetched.pop(topic, None)
                log.warning("route.removed", topic=topic)
            raise
        except RocketMQError as exc:
            cached = self._routes.get(topic)
            if cached is None:
                raise
            log.warning("route.refresh_failed", topic=topic, error=str(exc), serving="cached")
            return cached
        route = TopicRoute.from_data(topic, data)
        old = self._routes.get(topic)
        if not self._latest(topic, place):
            return old if old is not None else route
        if old is None or old.data != route.data:
            log.info(
                "route.changed",
                topic=topic,
                publish=len(route.publish_queues),
                subscribe=len(route.subscribe_queues),
                brokers=sorted(route.brokers),
            )
        self._routes[topic] = route
        self._fetched[topic] = time.monotonic()
        return route

    def describe(self) -> Node:
        return Node(name="routes", kind="route-refresher", info={"topics": len(self._routes)})

    async def broker_addr(
        self, queue: MessageQueue, *, master_only: bool, broker_id: int = MASTER_ID
    ) -> str:
        """The address serving ``queue`` (:meth:`TopicRoute.node_addr`): pulls and consumer
        offsets may use a slave; send-backs and locks must go to the master."""
        route = self._routes.get(queue.topic) or await self.get(queue.topic)
        addr = route.node_addr(queue.broker_name, master_only=master_only, broker_id=broker_id)
        if addr is None:
            raise BrokerError(
                queue.broker_name,
                ResponseCode.SERVICE_NOT_AVAILABLE,
                "no master" if master_only else "no address",
            )
        return addr

    def master_addr(self, broker_name: str) -> str | None:
        for route in self._routes.values():
            addr = route.master_addr(broker_name)
            if addr:
                return addr
        return None

    def broker_addrs(self, *, masters_only: bool = True) -> set[str]:
        addrs: set[str] = set()
        for route in self._routes.values():
            for broker in route.brokers.values():
                for broker_id, addr in broker.broker_addrs.items():
                    if broker_id == MASTER_ID or not masters_only:
                        addrs.add(addr)
        return addrs

    def mark_stale(self, topic: str) -> None:
        """A request found ``topic``'s route wrong - its master unreachable, gone from the
        route, or refusing writes (a slave, after a failover): the refresher fetches it now
        rather than at its next interval (at most every :data:`STALE_REFRESH_SPACING` s).
        Java's client waits for its 30 s timer (MQClientInstance, pollNameServerInterval);
        a controller-mode failover promotes the slave within seconds, and the route names
        the new master as soon as it registers."""
        if topic in self._routes:
            self._stale.add(topic)
            self._wake.set()

    @property
    def stale(self) -> frozenset[str]:
        return frozenset(self._stale)

    async def run(self, *, task_status: TaskStatus[RouteTable] = anyio.TASK_STATUS_IGNORED) -> None:
        """The route refresher actor: every known topic every ``refresh_interval`` seconds,
        and topics marked stale as soon as they are marked (spaced)."""
        task_status.started(self)
        next_full = time.monotonic() + self.refresh_interval
        while True:
            with anyio.move_on_after(max(next_full - time.monotonic(), 0.0)):
                await self._wake.wait()
            self._wake = anyio.Event()  # (a mark during the refreshes below wakes the next)
            if time.monotonic() >= next_full:
                topics, on_demand = self.topics(), False
                next_full = time.monotonic() + self.refresh_interval
            else:
                topics, on_demand = sorted(self._stale), True
            self._stale.clear()
            for topic in topics:
                try:
                    await self.refresh(topic)
                except RocketMQError as exc:
                    log.info("route.refresh_error", topic=topic, error=str(exc))
            if on_demand:
                log.info("route.refresh_stale", topics=topics)
                await anyio.sleep(STALE_REFRESH_SPACING)  # pacing: see STALE_REFRESH_SPACING
