"""Health of a client for readiness probes: lifecycle state, NameServer, brokers, routes.

    health = producer.health()     # a Health; health.as_dict() for JSON
    if producer.ready: ...          # running, a NameServer answered, brokers reachable

A broker is ``connected`` (an open connection), ``reconnecting`` (its connection dropped and
the connection supervisor is dialling it again) or ``not_connected`` (never dialled, or the
supervisor gave up on it).
"""

from __future__ import annotations

import time
from typing import Any, Protocol

import attrs

from rocketmq_actors.protocol.bodies import MASTER_ID
from rocketmq_actors.runtime.pool import ConnectionPool

from .heartbeat import HeartbeatService
from .namesrv import NameServerClient
from .routes import TEMPLATE_TOPIC, RouteTable
from .versions import version_name


class HealthSource(Protocol):
    """What a health report reads of a client instance."""

    client_id: str
    pool: ConnectionPool
    namesrv: NameServerClient
    routes: RouteTable
    heartbeat: HeartbeatService


__all__ = [
    "BrokerHealth", "Health", "HealthSource", "NameServerHealth", "RouteHealth", "instance_health",
]  # fmt: skip

CONNECTED, RECONNECTING, NOT_CONNECTED = "connected", "reconnecting", "not_connected"


@attrs.frozen(kw_only=True)
class NameServerHealth:
    addrs: tuple[str, ...]
    current: str  # the one in use (sticky while it answers)
    reachable: bool  # the last request to the NameServers was answered
    last_ok_seconds_ago: float | None  # None: none ever answered
    last_error: str | None


@attrs.frozen(kw_only=True)
class BrokerHealth:
    addr: str
    name: str | None  # the broker name (None: known only by a connection)
    master: bool
    state: str  # connected | reconnecting | not_connected
    version: str | None  # e.g. "V5_3_3", from its heartbeat answers (None: not heard yet)

    @property
    def connected(self) -> bool:
        return self.state == CONNECTED


@attrs.frozen(kw_only=True)
class RouteHealth:
    topic: str
    age_seconds: float  # since it was last fetched from a NameServer
    writable_queues: int
    brokers: tuple[str, ...]


@attrs.frozen(kw_only=True)
class Health:
    """A client's ``health()``: whether it is ready for work, why not, what is wrong meanwhile,
    its lifecycle state and what it knows of routes and connections."""

    ready: bool
    reasons: tuple[str, ...]  # why not ready (empty when ready)
    warnings: tuple[str, ...]  # what is wrong without stopping the client's work
    kind: str
    group: str | None
    state: str  # the client's lifecycle state: new, starting, running, stopping, stopped
    client_id: str
    namesrv: NameServerHealth
    brokers: tuple[BrokerHealth, ...]
    routes: tuple[RouteHealth, ...]

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON types (tuples as lists)."""
        return attrs.asdict(self)  # (tuples become lists)


def _broker_state(instance: HealthSource, addr: str) -> str:
    pool = instance.pool
    conn = pool.registry.lookup(addr)
    if conn is not None and conn.is_open:
        return CONNECTED
    return RECONNECTING if pool.supervisor.has_child(addr) else NOT_CONNECTED


def instance_health(
    instance: HealthSource,
    *,
    kind: str,
    group: str | None,
    state: str,
    needs_brokers: bool,
) -> Health:
    """The health of a client on ``instance``. Ready: running, and (``needs_brokers``:
    producers) every known route has a master with an open connection (a route with none can
    take no send). NameServers that do not answer make it not ready only while it has no
    route to work with: with routes cached it goes on sending and consuming, as the Java
    client does, so a readiness probe must not take it out of service for a NameServer
    outage - that is a warning."""
    namesrv = instance.namesrv
    now = time.monotonic()
    ns = NameServerHealth(
        addrs=namesrv.addrs,
        current=namesrv.current,
        reachable=namesrv.reachable,
        last_ok_seconds_ago=None if namesrv.last_ok is None else round(now - namesrv.last_ok, 3),
        last_error=namesrv.last_error,
    )
    table = instance.routes
    versions = instance.heartbeat.versions
    nodes: dict[str, tuple[str | None, bool]] = {}
    routes: list[RouteHealth] = []
    unreachable: list[str] = []
    for topic in sorted(table.topics()):
        route = table.cached(topic)
        if route is None:
            continue
        for name, broker in route.brokers.items():
            for broker_id, addr in broker.broker_addrs.items():
                nodes[addr] = (name, broker_id == MASTER_ID)
        age = table.age(topic)
        routes.append(RouteHealth(
            topic=topic, age_seconds=round(age or 0.0, 3),
            writable_queues=len(route.publish_queues), brokers=tuple(sorted(route.brokers)),
        ))  # fmt: skip
        masters = [addr for _, addr in route.masters()]
        if masters and not any(_broker_state(instance, a) == CONNECTED for a in masters):
            unreachable.append(topic)
    for addr in instance.pool.registry:  # connections to brokers no route names (yet)
        if addr not in nodes and addr not in namesrv.addrs:
            nodes[addr] = (None, False)
    brokers = tuple(
        BrokerHealth(
            addr=addr, name=name, master=master, state=_broker_state(instance, addr),
            version=version_name(versions[addr]) if addr in versions else None,
        )
        for addr, (name, master) in sorted(nodes.items())
    )  # fmt: skip
    reasons: list[str] = []
    warnings: list[str] = []
    if state != "running":  # (then what it cannot reach says nothing more)
        reasons.append(f"the client is {state}")
    elif not ns.reachable:
        usable = [r for r in routes if r.topic != TEMPLATE_TOPIC]
        (warnings if usable else reasons).append(f"no NameServer answered: {ns.last_error}")
    if state == "running" and needs_brokers and unreachable:
        reasons.append(f"no connected master for {', '.join(unreachable)}")
    return Health(
        ready=not reasons, reasons=tuple(reasons), warnings=tuple(warnings), kind=kind,
        group=group, state=state, client_id=instance.client_id, namesrv=ns, brokers=brokers,
        routes=tuple(routes),
    )  # fmt: skip
