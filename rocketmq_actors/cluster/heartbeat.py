"""Heartbeats: the broker's registry of this client's producer and consumer groups.

Every ``interval`` seconds (and on demand) a HEART_BEAT with every registered group goes to the
brokers this instance knows: masters for producers; every broker (masters and slaves) once a
consumer is registered, as the Java client does. On close, UNREGISTER_CLIENT per group and broker.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio
import attrs
from anyio.abc import TaskStatus

from rocketmq_actors.errors import RequestTimeout, RocketMQError, broker_error
from rocketmq_actors.logs import get_logger
from rocketmq_actors.protocol.bodies import ConsumerData, HeartbeatData
from rocketmq_actors.protocol.codes import RequestCode, ResponseCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.protocol.headers import UnregisterClientRequestHeader
from rocketmq_actors.runtime.pool import ConnectionPool
from rocketmq_actors.runtime.tree import Node

from .routes import RouteTable

__all__ = ["HeartbeatService"]

log = get_logger("rocketmq_actors.cluster")


@attrs.define
class _Lookup:
    """One heartbeat under way to learn a broker's version; concurrent callers wait for it."""

    done: anyio.Event = attrs.field(factory=anyio.Event)
    error: RocketMQError | None = None


class HeartbeatService:
    def __init__(
        self,
        pool: ConnectionPool,
        routes: RouteTable,
        client_id: str,
        *,
        interval: float = 30.0,
        timeout: float = 3.0,
    ) -> None:
        self.client_id = client_id
        self.interval = interval
        self.timeout = timeout
        self._pool = pool
        self._routes = routes
        self._producers: set[str] = set()
        self._consumers: dict[str, Callable[[], ConsumerData]] = {}
        self.rounds = 0
        #: broker address -> the ``version`` of its last heartbeat answer (an ordinal of
        #: Java's MQVersion.Version: what the broker runs, set on every response it sends)
        self.versions: dict[str, int] = {}
        self._lookups: dict[str, _Lookup] = {}  # broker address -> the heartbeat under way
        self._again: set[str] = set()  # brokers connected to again since the last look
        self._woken: anyio.Event | None = None  # (made by run(): an event needs a loop)
        #: told (with the address) once a broker connected to again has this client's groups
        #: again: the consumers rebalance (Java's onChannelActive -> rebalanceImmediately)
        self.on_registered: Callable[[str], None] | None = None

    def add_producer(self, group: str) -> None:
        self._producers.add(group)

    def remove_producer(self, group: str) -> None:
        self._producers.discard(group)

    def add_consumer(self, group: str, data: Callable[[], ConsumerData]) -> None:
        """``data()`` is called at each heartbeat: subscriptions may change over time."""
        self._consumers[group] = data

    def remove_consumer(self, group: str) -> None:
        self._consumers.pop(group, None)

    def heartbeat_data(self) -> HeartbeatData:
        return HeartbeatData(
            client_id=self.client_id,
            producer_groups=tuple(sorted(self._producers)),
            consumers=tuple(data() for _, data in sorted(self._consumers.items())),
        )

    def targets(self) -> set[str]:
        return self._routes.broker_addrs(masters_only=not self._consumers)

    async def beat(
        self, only: set[str] | None = None, *, answered: Callable[[str], None] | None = None
    ) -> dict[str, str | None]:
        """One heartbeat to every target broker now (or to those of ``only`` that are targets),
        side by side; ``answered(addr)`` as each one answers. Returns ``addr -> error (or
        None)``."""
        if not self._producers and not self._consumers:
            return {}
        body = self.heartbeat_data().encode()
        results: dict[str, str | None] = {}

        async def one(addr: str) -> None:
            try:
                await self._beat_one(addr, body, self.timeout)
            except RocketMQError as exc:
                results[addr] = str(exc)
                log.warning("heartbeat.failed", addr=addr, error=str(exc))
                return
            results[addr] = None
            if answered is not None:
                answered(addr)

        targets = self.targets()
        async with anyio.create_task_group() as tg:
            for addr in sorted(targets if only is None else only & targets):
                tg.start_soon(one, addr)
        if only is None:
            self.rounds += 1
        return results

    async def _beat_one(self, addr: str, body: bytes, timeout: float) -> None:
        reply = await self._pool.request(
            addr, RemotingCommand.request(RequestCode.HEART_BEAT, body=body), timeout
        )
        self.versions[addr] = reply.version
        if reply.code != ResponseCode.SUCCESS:
            raise broker_error(addr, reply.code, reply.remark)

    async def version_of(self, addr: str, timeout: float) -> int:
        """The version ``addr`` runs: known from its last heartbeat, else learnt now from one
        heartbeat to it alone (which registers this client's groups there, as the periodic
        one would). Concurrent callers share that heartbeat (1000 timer sends at start-up:
        one heartbeat, not 1000); each waits at most ``timeout``."""
        version = self.versions.get(addr)
        if version is not None:
            return version
        with anyio.move_on_after(timeout):
            while (version := self.versions.get(addr)) is None:
                lookup = self._lookups.get(addr)
                if lookup is not None:  # another caller's heartbeat is under way
                    await lookup.done.wait()
                    if lookup.error is not None:
                        raise lookup.error.with_traceback(None)
                    continue  # (its caller was cancelled before the answer: ask again)
                await self._look_up(addr, timeout)
            return version
        raise RequestTimeout(addr, RequestCode.HEART_BEAT, timeout)

    async def _look_up(self, addr: str, timeout: float) -> None:
        lookup = self._lookups[addr] = _Lookup()
        try:
            await self._beat_one(addr, self.heartbeat_data().encode(), min(timeout, self.timeout))
        except RocketMQError as exc:
            lookup.error = exc
            raise
        finally:
            del self._lookups[addr]
            lookup.done.set()

    def again(self, addr: str) -> None:
        """A new connection to ``addr`` replaced one that closed: a broker drops a client's
        registrations with its connection, so the actor heartbeats it now rather than at the
        next interval (Java's onChannelActive)."""
        self._again.add(addr)
        if self._woken is not None:
            self._woken.set()

    async def run(
        self, *, task_status: TaskStatus[HeartbeatService] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """The heartbeat actor: every broker each interval, and one connected to again at
        once."""
        self._woken = anyio.Event()
        if self._again:  # (told before this run: a restart of the actor)
            self._woken.set()
        task_status.started(self)
        while True:
            await self.beat()
            await self._rest()

    async def _rest(self) -> None:
        """Wait the interval, heartbeating meanwhile the brokers connected to again."""
        deadline = anyio.current_time() + self.interval
        while True:
            woken = self._woken = self._woken or anyio.Event()
            with anyio.move_on_after(deadline - anyio.current_time()):
                await woken.wait()
            if not self._again:
                return  # the interval is over
            self._woken = anyio.Event()
            again, self._again = self._again, set()
            await self.beat(again, answered=self._registered)  # (a NameServer's: none)

    def _registered(self, addr: str) -> None:
        log.info("heartbeat.reconnected", addr=addr)
        if self.on_registered is not None:
            self.on_registered(addr)

    def describe(self) -> Node:
        return Node(name="heartbeat", kind="heartbeat", info={
            "rounds": self.rounds, "producers": len(self._producers),
            "consumers": len(self._consumers),
        })  # fmt: skip

    async def unregister(self, *, producer: str | None = None, consumer: str | None = None) -> None:
        """Tell every known broker this client left ``producer`` / ``consumer`` group."""
        header = UnregisterClientRequestHeader(
            client_id=self.client_id, producer_group=producer, consumer_group=consumer
        )

        async def one(addr: str) -> None:
            try:
                cmd = RemotingCommand.request(RequestCode.UNREGISTER_CLIENT, header.to_ext())
                await self._pool.request(addr, cmd, self.timeout)
            except RocketMQError as exc:
                log.info("heartbeat.unregister_failed", addr=addr, error=str(exc))

        async with anyio.create_task_group() as tg:
            for addr in sorted(self._routes.broker_addrs(masters_only=False)):
                tg.start_soon(one, addr)
