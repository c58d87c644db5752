"""ClientInstance: the root of one client's actor tree.

    ClientInstance(client id "ip@pid#n#t")
    ├─ connections   DynamicSupervisor of BrokerConnections, registered by address
    ├─ routes        the route refresher: every route_refresh_interval (a supervised child)
    ├─ heartbeat     heartbeats every heartbeat_interval (a supervised child)
    └─ router        broker requests, decoded -> producer/consumer mailboxes (not a task)

Producers and consumers created on one instance share its connections. The refresher and the
heartbeat are restarted by the instance's supervisor after an unexpected error; one that keeps
failing stops the instance (and its members) with ``SupervisorGaveUp``. Stopping unregisters
the groups (best effort, within the stop deadline), stops the actors and closes every
connection.
"""

from __future__ import annotations

import itertools
import os
import ssl
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from typing import Any

import anyio

from rocketmq_actors.errors import ConfigError
from rocketmq_actors.logs import get_logger
from rocketmq_actors.protocol.acl import AclCredentials
from rocketmq_actors.protocol.bodies import ConsumerData
from rocketmq_actors.protocol.codes import RequestCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.runtime.checks import check_timeout
from rocketmq_actors.runtime.lifecycle import Lifecycle
from rocketmq_actors.runtime.mailbox import Mailbox
from rocketmq_actors.runtime.netinfo import local_ipv4
from rocketmq_actors.runtime.pool import ConnectionPool
from rocketmq_actors.runtime.router import CONSUMER_EVENTS, PRODUCER_EVENTS, Inbound, Router
from rocketmq_actors.runtime.supervisor import ChildSpec, DynamicSupervisor, Restart, RestartPolicy
from rocketmq_actors.runtime.tree import Node

from .health import Health, instance_health
from .heartbeat import HeartbeatService
from .namesrv import NameServerClient, parse_namesrv
from .routes import RouteTable

__all__ = ["INSTANCE_POLICY", "ClientInstance"]

log = get_logger("rocketmq_actors.cluster")
_instances = itertools.count(1)

#: the route refresher and the heartbeat: restarted after an unexpected error (the network
#: errors they expect are retried inside), up to 5 times a minute, then the instance stops
INSTANCE_POLICY = RestartPolicy(
    max_restarts=5, period=60.0, backoff_initial=0.5, backoff_max=10.0, escalate=True
)


class ClientInstance(Lifecycle):
    """One client's connections, routes and heartbeats (Java's ``MQClientInstance``), shared by
    the producers and consumers built on it (``instance=``); the clients of a process share
    one per NameServer set and instance name unless given their own (see the module
    docstring for its actor tree)."""

    def __init__(
        self,
        namesrv: str | Sequence[str],
        *,
        instance_name: str | None = None,
        connect_timeout: float = 3.0,
        request_timeout: float = 3.0,
        ssl_context: ssl.SSLContext | None = None,
        credentials: AclCredentials | None = None,
        address_map: Mapping[str, str] | None = None,
        heartbeat_interval: float = 30.0,
        route_refresh_interval: float = 30.0,
        namesrv_cooldown: float = 10.0,
        shutdown_timeout: float = 10.0,
        on_error: Callable[[BaseException], object] | None = None,
    ) -> None:
        super().__init__(shutdown_timeout=shutdown_timeout, on_error=on_error)
        parse_namesrv(namesrv)  # bad addresses fail here, before any I/O
        check_timeout("connect_timeout", connect_timeout)
        check_timeout("request_timeout", request_timeout)
        check_timeout("heartbeat_interval", heartbeat_interval)
        check_timeout("route_refresh_interval", route_refresh_interval)
        check_timeout("namesrv_cooldown", namesrv_cooldown, allow_zero=True)
        # as Java's ClientConfig.buildMQClientId: ip@instanceName, where the default name is
        # unique to the process and the moment (Java: pid#nanoTime); a name that is given is
        # kept as it is, so the id (and a broadcasting consumer's local offsets) survive a
        # restart - and two live instances must not share one
        self.client_id = (
            f"{local_ipv4()}@{instance_name}" if instance_name
            else f"{local_ipv4()}@{os.getpid()}#{next(_instances)}#{time.time_ns()}"
        )  # fmt: skip
        self.request_timeout = request_timeout
        self.router = Router()
        self.pool = ConnectionPool(
            on_request=self.router.dispatch,
            on_reconnect=self._reconnected,
            connect_timeout=connect_timeout,
            ssl_context=ssl_context,
            credentials=credentials,
            address_map=address_map,
        )
        self.namesrv = NameServerClient(
            self.pool, namesrv, timeout=request_timeout, cooldown=namesrv_cooldown
        )
        self.routes = RouteTable(self.namesrv, refresh_interval=route_refresh_interval)
        self.heartbeat = HeartbeatService(
            self.pool, self.routes, self.client_id, interval=heartbeat_interval,
            timeout=request_timeout,
        )  # fmt: skip
        self.heartbeat.on_registered = self._registered_again
        self._producer_groups: set[str] = set()
        self._consumer_groups: set[str] = set()
        self._supervisor = DynamicSupervisor(
            "instance", INSTANCE_POLICY, shutdown_timeout=shutdown_timeout
        )

    def _reconnected(self, addr: str) -> None:
        # a broker forgets this client's groups when a connection closes (ConsumerManager's
        # doChannelCloseEvent): heartbeat it at once on the new one
        self.heartbeat.again(addr)

    def _registered_again(self, addr: str) -> None:
        """The broker at ``addr`` has this client's groups again: each consumer rebalances now,
        as when a broker says a group's members changed (Java's rebalanceImmediately)."""
        conn = self.pool.registry.lookup(addr)
        if conn is None or not conn.is_open:
            return
        for group in sorted(self._consumer_groups):
            notice = RemotingCommand.request(
                RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, {"consumerGroup": group}, oneway=True
            )
            self.router.dispatch(conn, notice)

    def _describe(self) -> str:
        return f"ClientInstance({self.client_id})"

    def describe(self) -> Node:
        """This instance's part of ``tree()``: its connections, refresher and heartbeat."""
        children = (
            self.pool.supervisor.describe(kind="connection-supervisor"),
            *self._supervisor.describe().children,
            self.router.describe(),
        )
        return Node(name=self._describe(), kind="client-instance", state=self.state.value,
                    last_error=repr(self.error) if self.error else None,
                    children=children)  # fmt: skip

    async def _open(self, stack: AsyncExitStack) -> None:
        await stack.enter_async_context(self.pool)
        # a NameServer must answer before the client counts as started: a service learns at
        # start-up, not at its first send, that it cannot reach the cluster
        await self.namesrv.probe()
        supervisor = await stack.enter_async_context(self._supervisor)
        await supervisor.start_child(
            ChildSpec("routes", self.routes.run, Restart.PERMANENT, kind="route-refresher")
        )
        await supervisor.start_child(
            ChildSpec("heartbeat", self.heartbeat.run, Restart.PERMANENT, kind="heartbeat")
        )
        log.info("instance.started", client_id=self.client_id, namesrv=self.namesrv.addrs)

    async def _closing(self) -> None:
        with anyio.move_on_after(min(self.request_timeout, self._time_left())):
            for group in sorted(self._producer_groups):
                await self.heartbeat.unregister(producer=group)
            for group in sorted(self._consumer_groups):
                await self.heartbeat.unregister(consumer=group)
        log.info("instance.stopped", client_id=self.client_id)

    # ---- owners -------------------------------------------------------------------------

    def register_producer(self, group: str, mailbox: Mailbox[Inbound]) -> None:
        """(For a producer as it starts.) Heartbeat ``group`` and route the broker's requests
        for it to ``mailbox``; a group registered twice is a :class:`ConfigError`."""
        self._check_running()
        if group in self._producer_groups:
            raise ConfigError(f"producer group {group!r} is already registered on this instance")
        self._producer_groups.add(group)
        self.router.register(PRODUCER_EVENTS, group, mailbox)
        self.heartbeat.add_producer(group)

    def register_consumer(
        self, group: str, mailbox: Mailbox[Inbound], data: Callable[[], ConsumerData]
    ) -> None:
        """(For a consumer as it starts.) As :meth:`register_producer`; ``data`` gives the
        group's heartbeat entry (its subscriptions) at each heartbeat."""
        self._check_running()
        if group in self._consumer_groups:
            raise ConfigError(f"consumer group {group!r} is already registered on this instance")
        self._consumer_groups.add(group)
        self.router.register(CONSUMER_EVENTS, group, mailbox)
        self.heartbeat.add_consumer(group, data)

    async def unregister_producer(self, group: str) -> None:
        """(For a producer as it stops.) No more heartbeats or broker requests for ``group``;
        the brokers are told (UNREGISTER_CLIENT)."""
        if group in self._producer_groups:
            self._producer_groups.discard(group)
            self.router.unregister(PRODUCER_EVENTS, group)
            self.heartbeat.remove_producer(group)
            await self.heartbeat.unregister(producer=group)

    async def unregister_consumer(self, group: str) -> None:
        """(For a consumer as it stops.) As :meth:`unregister_producer`."""
        if group in self._consumer_groups:
            self._consumer_groups.discard(group)
            self.router.unregister(CONSUMER_EVENTS, group)
            self.heartbeat.remove_consumer(group)
            await self.heartbeat.unregister(consumer=group)

    # ---- requests -----------------------------------------------------------------------

    async def request(
        self, addr: str, cmd: RemotingCommand, timeout: float | None = None, *, slot: bool = False
    ) -> RemotingCommand:
        """``cmd``'s response from ``addr``; ``slot=True`` for a request the broker may hold (a
        pull, a pop): it takes one of the connection's slots, the others never wait for one."""
        self._check_running()
        return await self.pool.request(addr, cmd, timeout or self.request_timeout, slot=slot)

    async def oneway(self, addr: str, cmd: RemotingCommand) -> None:
        """Send ``cmd`` to the broker at ``addr`` without waiting for an answer."""
        self._check_running()
        await self.pool.oneway(addr, cmd)

    def health(self) -> Health:
        """Lifecycle state, NameServer, brokers and routes (:mod:`.health`); ``ready`` when
        running and a NameServer answered."""
        return instance_health(self, kind="client-instance", group=None,
                               state=self.state.value, needs_brokers=False)  # fmt: skip

    @property
    def ready(self) -> bool:
        """``health().ready``: running, and a NameServer answered."""
        return self.health().ready

    def statistics(self) -> dict[str, Any]:
        """Counters for diagnostics: connections, routes, heartbeat rounds, broker requests
        nobody took."""
        return {
            "client_id": self.client_id,
            "pool": self.pool.statistics(),
            "routes": self.routes.topics(),
            "heartbeat_rounds": self.heartbeat.rounds,
            "router": {"unsupported": self.router.unsupported,
                       "undeliverable": self.router.undeliverable},
        }  # fmt: skip
