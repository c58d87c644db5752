"""The connection supervisor: one :class:`BrokerConnection` per address, started on demand.

``get(addr)`` returns the live connection registered for ``addr``, or starts one under the
:class:`DynamicSupervisor` (many concurrent callers share one start). Connections are TRANSIENT
children: when one dies of an error the supervisor reconnects it with jittered backoff, and a
caller arriving meanwhile waits for the new connection (up to the connect timeout) instead of
racing it (it wakes when the connection registers, or when the supervisor gives up on it). A
connection that keeps failing is given up; the next ``get`` starts afresh. ``on_reconnect``
hears of a new connection to an address connected before: at once if the peer answered on
the last one, else at the first answer on the new one (a peer that accepts connections but
never answers - a stopped broker - is not told about at each dial).
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Callable, Mapping
from functools import partial
from types import TracebackType
from typing import Any

import anyio
from anyio.abc import TaskStatus

from rocketmq_actors.errors import ConnectError, RequestTimeout
from rocketmq_actors.logs import get_logger
from rocketmq_actors.metrics import METRICS
from rocketmq_actors.protocol.acl import AclCredentials
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.protocol.errors import ProtocolError

from .connection import (
    MAX_IN_FLIGHT,
    WRITE_TIMEOUT,
    BrokerConnection,
    ConnectionClosedByPeer,
    RequestHandler,
    connect,
)
from .registry import Registry
from .supervisor import ChildSpec, DynamicSupervisor, Restart, RestartPolicy

__all__ = ["ConnectionPool"]

log = get_logger("rocketmq_actors.runtime")

DEFAULT_CONNECTION_POLICY = RestartPolicy(
    max_restarts=5, period=10.0, backoff_initial=0.2, backoff_max=5.0, escalate=False
)


class ConnectionPool:
    def __init__(
        self,
        *,
        on_request: RequestHandler | None = None,
        on_reconnect: Callable[[str], None] | None = None,
        connect_timeout: float = 3.0,
        ssl_context: ssl.SSLContext | None = None,
        credentials: AclCredentials | None = None,
        address_map: Mapping[str, str] | None = None,
        policy: RestartPolicy = DEFAULT_CONNECTION_POLICY,
        max_connections: int | None = None,
        max_in_flight: int = MAX_IN_FLIGHT,
        max_in_flight_bytes: int = 64 * 1024 * 1024,
        shutdown_timeout: float = 5.0,
    ) -> None:
        self.connect_timeout = connect_timeout
        self._on_request = on_request
        # told (with the address) of a connection to an address connected before, once the
        # peer may have forgotten this client with the old one (a broker's registrations)
        self._on_reconnect = on_reconnect
        self._answered: dict[str, bool] = {}  # address -> whether its last connection was
        self._ssl = ssl_context
        self.credentials = credentials
        self.address_map = dict(address_map or {})
        self._max_in_flight = max_in_flight
        self._max_in_flight_bytes = max_in_flight_bytes
        self.registry: Registry[str, BrokerConnection] = Registry()
        self.supervisor = DynamicSupervisor(
            "connections", policy, max_children=max_connections, shutdown_timeout=shutdown_timeout
        )
        self.connects = 0
        self._changes: dict[str, anyio.Event] = {}

    async def __aenter__(self) -> ConnectionPool:
        await self.supervisor.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        return await self.supervisor.__aexit__(exc_type, exc, tb)

    async def get(self, addr: str, *, wait: bool = True) -> BrokerConnection:
        """The open connection to ``addr``, started if there is none. While the supervisor is
        reconnecting it, wait for the new one (bounded by the connect timeout) - or, with
        ``wait=False`` (a send that may fail over to another broker), raise
        :class:`ConnectError` at once (callers arriving during its very first connect still
        wait for that one)."""
        conn = self.registry.lookup(addr)
        if conn is not None and conn.is_open:
            return conn
        supervisor = self.supervisor
        if not wait and supervisor.has_child(addr) and not supervisor.is_first_start(addr):
            # it was connected and is not now (dropped, restarting): do not wait for it
            raise ConnectError(addr, "reconnecting")
        async with self.registry.lock(addr):
            deadline = time.monotonic() + self.connect_timeout
            while True:
                conn = self.registry.lookup(addr)
                if conn is not None and conn.is_open:
                    return conn
                if not self.supervisor.has_child(addr):
                    spec: ChildSpec[BrokerConnection] = ChildSpec(
                        addr,
                        partial(self._run, addr),
                        Restart.TRANSIENT,
                        shutdown=BrokerConnection.close,
                        on_exit=partial(self._changed, addr),
                        kind="connection",
                        expected=(ConnectionClosedByPeer, OSError, ProtocolError),
                        at_once=(RequestTimeout,),  # closed for a silent peer: dial again now
                    )
                    return await self.supervisor.start_child(spec)
                # the supervisor is reconnecting (or about to give up): wait for either
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise ConnectError(addr, "reconnecting; no connection yet")
                event = self._changes.setdefault(addr, anyio.Event())
                with anyio.move_on_after(remaining):
                    await event.wait()

    def _changed(self, addr: str) -> None:
        """A connection to ``addr`` registered, or its supervised child is gone."""
        event = self._changes.pop(addr, None)
        if event is not None:
            event.set()

    async def request(
        self, addr: str, cmd: RemotingCommand, timeout: float, *, slot: bool = False
    ) -> RemotingCommand:
        """``cmd``'s response from ``addr``; ``slot``: see :meth:`BrokerConnection.request`."""
        conn = await self.get(addr)
        return await conn.request(cmd, timeout, slot=slot)

    async def oneway(self, addr: str, cmd: RemotingCommand, timeout: float = WRITE_TIMEOUT) -> None:
        conn = await self.get(addr)
        await conn.oneway(cmd, timeout)

    def statistics(self) -> dict[str, Any]:
        return {
            "connections": [
                conn.statistics() for a in self.registry if (conn := self.registry.lookup(a))
            ],
            "connects": self.connects,
            "supervisor": self.supervisor.statistics(),
        }

    async def _run(self, addr: str, *, task_status: TaskStatus[BrokerConnection]) -> None:
        dial = self.address_map.get(addr, addr)  # NAT, port forwarding, a fault proxy
        stream = await connect(dial, timeout=self.connect_timeout, ssl_context=self._ssl)
        conn = BrokerConnection(
            addr,
            stream,
            on_request=self._on_request,
            max_in_flight=self._max_in_flight,
            max_in_flight_bytes=self._max_in_flight_bytes,
            credentials=self.credentials,
        )
        self.connects += 1
        self.registry.register(addr, conn)
        self._changed(addr)
        if self._on_reconnect is not None and addr in self._answered:
            told = partial(self._on_reconnect, addr)
            if self._answered[addr]:  # the peer served the last one: tell now (Java does)
                told()
            else:  # a peer that never answered the last one (stopped, or away): tell once it
                conn.on_first_answer = told  # serves this one, not at each dial meanwhile
        self._answered[addr] = False
        log.info("connection.opened", addr=addr, tls=self._ssl is not None)
        METRICS.inc("rocketmq_client_connections_opened_total", addr=addr)
        try:
            task_status.started(conn)
            await conn.serve()
        finally:
            self.registry.unregister(addr, conn)
            self._answered[addr] = conn.answered
