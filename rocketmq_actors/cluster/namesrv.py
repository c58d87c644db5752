"""NameServer client: several addresses, a sticky choice, failover with a per-address cool-down.

Like the Java client it keeps using one NameServer while it answers. An address that fails
(cannot connect, connection lost, timeout) is cooled down for ``cooldown`` seconds: other
addresses are tried first; cooled-down ones only as a last resort.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence

from rocketmq_actors.errors import (
    BrokerError,
    ConfigError,
    NameServerUnavailable,
    RocketMQError,
    TopicNotFound,
    broker_error,
)
from rocketmq_actors.logs import get_logger
from rocketmq_actors.protocol.bodies import ClusterInfo, TopicRouteData, decode_topic_list
from rocketmq_actors.protocol.codes import RequestCode, ResponseCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.protocol.errors import ProtocolError
from rocketmq_actors.protocol.headers import GetRouteInfoRequestHeader
from rocketmq_actors.runtime.connection import split_addr
from rocketmq_actors.runtime.pool import ConnectionPool

__all__ = ["NameServerClient", "parse_namesrv"]

log = get_logger("rocketmq_actors.cluster")


def parse_namesrv(namesrv: str | Sequence[str]) -> tuple[str, ...]:
    """``"a:9876;b:9876"`` or a list of addresses; each must be ``host:port``."""
    if isinstance(namesrv, str):
        items: list[object] = list(namesrv.split(";"))
    elif isinstance(namesrv, Sequence):
        items = list(namesrv)
    else:
        raise ConfigError(f"namesrv must be 'host:port[;host:port...]', not {namesrv!r}")
    if not all(isinstance(a, str) for a in items):
        raise ConfigError(f"namesrv addresses must be strings, not {namesrv!r}")
    addrs = tuple(a.strip() for a in items if isinstance(a, str) and a.strip())
    if not addrs:
        raise ConfigError("no NameServer address given (expected 'host:port[;host:port...]')")
    for addr in addrs:
        try:
            split_addr(addr)  # a malformed address fails here, before any network I/O
        except ValueError as exc:
            raise ConfigError(f"NameServer address {addr!r} is not host:port") from exc
    return addrs


class NameServerClient:
    def __init__(
        self,
        pool: ConnectionPool,
        namesrv: str | Sequence[str],
        *,
        timeout: float = 3.0,
        cooldown: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.addrs = parse_namesrv(namesrv)
        self.timeout = timeout
        self.cooldown = cooldown
        self._pool = pool
        self._clock = clock
        self._current = random.randrange(len(self.addrs))
        self._cool_until: dict[str, float] = {}
        self.last_ok: float | None = None  # (clock) when a NameServer last answered
        self.last_failed: float | None = None  # when a request last found none answering
        self.last_error: str | None = None

    @property
    def current(self) -> str:
        return self.addrs[self._current]

    def update(self, namesrv: str | Sequence[str]) -> None:
        """Ask ``namesrv`` from now on (Java's ``updateNameServerAddressList``): a request
        under way finishes with the addresses it started with."""
        addrs = parse_namesrv(namesrv)  # (ConfigError: nothing changed)
        self.addrs = addrs
        self._current = random.randrange(len(addrs))
        self._cool_until = {a: t for a, t in self._cool_until.items() if a in addrs}
        log.info("namesrv.updated", addrs=";".join(addrs))

    def _candidates(self) -> list[str]:
        now = self._clock()
        ordered = self.addrs[self._current :] + self.addrs[: self._current]
        fresh = [a for a in ordered if self._cool_until.get(a, 0.0) <= now]
        cooling = [a for a in ordered if a not in fresh]
        return fresh + cooling

    async def request(self, build: Callable[[], RemotingCommand]) -> RemotingCommand:
        """Send a fresh command from ``build()`` to one NameServer after another until one
        answers (with any code)."""
        last: RocketMQError | None = None
        for addr in self._candidates():
            try:
                reply = await self._pool.request(addr, build(), self.timeout)
            except RocketMQError as exc:
                if not exc.retriable:
                    raise
                self._cool_until[addr] = self._clock() + self.cooldown
                log.info("namesrv.failed", addr=addr, error=str(exc))
                last = exc
                continue
            if addr != self.current:
                log.info("namesrv.switched", addr=addr)
                self._current = self.addrs.index(addr)
            self._cool_until.pop(addr, None)
            self.last_ok = self._clock()
            return reply
        self.last_failed, self.last_error = self._clock(), str(last)
        raise NameServerUnavailable(
            f"no NameServer of {';'.join(self.addrs)} answered: {last}"
        ) from last

    @property
    def reachable(self) -> bool:
        """A NameServer answered the last request (and one ever did)."""
        return self.last_ok is not None and (
            self.last_failed is None or self.last_ok >= self.last_failed
        )

    async def probe(self) -> None:
        """Ask the NameServers (in failover order) for the template topic's route until one
        answers, whatever the answer; :class:`NameServerUnavailable` when none does."""
        await self.request(
            lambda: RemotingCommand.request(
                RequestCode.GET_ROUTEINFO_BY_TOPIC,
                GetRouteInfoRequestHeader(topic="TBW102", accept_standard_json_only=True).to_ext(),
            )
        )

    async def topic_route(self, topic: str) -> TopicRouteData:
        reply = await self.request(
            lambda: RemotingCommand.request(
                RequestCode.GET_ROUTEINFO_BY_TOPIC,
                GetRouteInfoRequestHeader(topic=topic, accept_standard_json_only=True).to_ext(),
            )
        )
        if reply.code == ResponseCode.TOPIC_NOT_EXIST:
            raise TopicNotFound(topic)
        if reply.code != ResponseCode.SUCCESS:
            raise broker_error(self.current, reply.code, reply.remark)
        try:
            return TopicRouteData.decode(reply.body)
        except ProtocolError as exc:
            raise BrokerError(self.current, reply.code, f"bad route body: {exc}") from exc

    async def cluster_info(self) -> ClusterInfo:
        reply = await self.request(
            lambda: RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO)
        )
        if reply.code != ResponseCode.SUCCESS:
            raise broker_error(self.current, reply.code, reply.remark)
        return ClusterInfo.decode(reply.body)

    async def topic_list(self) -> list[str]:
        """Every topic the NameServers know (GET_ALL_TOPIC_LIST_FROM_NAMESERVER)."""
        reply = await self.request(
            lambda: RemotingCommand.request(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
        )
        if reply.code != ResponseCode.SUCCESS:
            raise broker_error(self.current, reply.code, reply.remark)
        try:
            return decode_topic_list(reply.body)
        except ProtocolError as exc:
            raise BrokerError(self.current, reply.code, f"bad topic list: {exc}") from exc
