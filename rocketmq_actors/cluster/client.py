"""What every public client offers, over the actor group that does the work.

A public client (``Producer``, ``PushConsumer``, ...) is thin: it keeps the methods a user
calls and hands everything else to its actor group, a :class:`GroupMember` of its own
(supervisor, wiring, the ports its actors call), which users never see. This base gives
every client the same lifecycle, state and health, delegated to that group.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType
from typing import Generic, Self, TypeVar

from rocketmq_actors.runtime.lifecycle import State
from rocketmq_actors.runtime.tree import Node

from .health import Health
from .instance import ClientInstance
from .member import GroupMember

__all__ = ["Client"]

G = TypeVar("G", bound=GroupMember)


class Client(Generic[G]):
    """``async with client:`` or ``await client.start()`` / ``await client.stop()``."""

    _group: G

    async def start(self) -> None:
        """Start and return once ready; idempotent. Raises a ``RocketMQError`` if it cannot
        start."""
        await self._group.start()

    async def stop(self) -> None:
        """Stop gracefully within ``shutdown_timeout`` and wait for it; idempotent, from any
        task. In a cancelled scope it still stops, then raises the cancellation."""
        await self._group.stop()

    async def wait_closed(self) -> None:
        """Until the client has stopped; raises the error it failed with, if it did."""
        await self._group.wait_closed()

    async def __aenter__(self) -> Self:
        await self._group.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        return await self._group.__aexit__(exc_type, exc, tb)

    @property
    def group(self) -> str:
        """The group's name on the wire (with the namespace, if one is set)."""
        return self._group.group

    @property
    def state(self) -> State:
        return self._group.state

    @property
    def running(self) -> bool:
        return self._group.running

    @property
    def error(self) -> BaseException | None:
        """What the client failed with (None while it runs, or after a clean stop)."""
        return self._group.error

    @property
    def instance(self) -> ClientInstance:
        """The client instance it runs on (connections, routes, heartbeats): what the admin
        calls take (``create_topic(client.instance, ...)``)."""
        return self._group.instance

    def health(self) -> Health:
        """For readiness probes: state, NameServer, brokers and routes; ``ready`` and, when
        not, the reasons."""
        return self._group.health()

    @property
    def ready(self) -> bool:
        """Running, a NameServer answers, and (producers) every known route has a master."""
        return self._group.ready

    def update_namesrv(self, namesrv: str | Sequence[str]) -> None:
        """Use the NameServers ``namesrv`` (``"host:port;host:port"`` or a list) from now on,
        as Java's ``updateNameServerAddress``: for every client sharing this one's
        :class:`~rocketmq_actors.cluster.instance.ClientInstance`. Routes are looked up there
        from the next lookup on; a bad address is a ``ConfigError``, with nothing changed."""
        self.instance.namesrv.update(namesrv)

    def tree(self) -> Node:
        """The live supervision tree (``tree().render()`` draws it)."""
        return self._group.tree()
