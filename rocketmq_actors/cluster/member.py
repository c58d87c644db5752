"""What producers and consumers share: membership of a group on a ClientInstance.

A member either creates its own instance from ``namesrv`` (and runs it for its lifetime) or
shares one it is given; it owns a mailbox for the broker's requests about its group and
registers the group with the instance (router + heartbeats) while it runs.
"""

from __future__ import annotations

import ssl
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack

from rocketmq_actors.protocol.acl import AclCredentials
from rocketmq_actors.runtime.lifecycle import Lifecycle
from rocketmq_actors.runtime.mailbox import Mailbox
from rocketmq_actors.runtime.router import Inbound

from .instance import ClientInstance

__all__ = ["GroupMember"]


class GroupMember(Lifecycle):
    def __init__(
        self,
        *,
        kind: str,
        group: str,
        namesrv: str | Sequence[str] | None,
        instance: ClientInstance | None,
        ssl_context: ssl.SSLContext | None = None,
        credentials: AclCredentials | None = None,
    ) -> None:
        if instance is None and namesrv is None:
            raise ValueError("give a NameServer address (namesrv=...) or a ClientInstance")
        if instance is not None and (ssl_context is not None or credentials is not None):
            raise ValueError("ssl_context and credentials belong to the shared ClientInstance")
        self.group = group
        self._own_instance = instance is None
        self._instance = instance or ClientInstance(
            namesrv or (), ssl_context=ssl_context, credentials=credentials
        )
        self.mailbox: Mailbox[Inbound] = Mailbox(f"{kind}:{group}")

    @property
    def instance(self) -> ClientInstance:
        return self._instance

    async def _join(
        self,
        stack: AsyncExitStack,
        register: Callable[[], None],
        unregister: Callable[[str], Awaitable[None]],
    ) -> None:
        """Run the instance if it is ours, register the group, and undo both on exit (the
        mailbox is disposed once everything opened after this step has closed)."""
        if self._own_instance:
            await stack.enter_async_context(self._instance)
        register()
        stack.push_async_callback(unregister, self.group)
        stack.callback(self.mailbox.dispose)
