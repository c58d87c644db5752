"""What producers and consumers share: membership of a group on a ClientInstance.

A member either leases the process's instance for ``namesrv`` (when not given, from the
``NAMESRV_ADDR`` environment variable, as the Java client reads it) and its settings, shared
with the other members of those settings (:mod:`.shared`), or runs on one it is given; it owns
a mailbox for the broker's requests about its group and registers the group with the instance
(router + heartbeats) while it runs.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack

import anyio

from rocketmq_actors.errors import ClientClosed, ConfigError
from rocketmq_actors.names import wrap
from rocketmq_actors.runtime.backoff import RestartPolicy
from rocketmq_actors.runtime.lifecycle import Lifecycle
from rocketmq_actors.runtime.mailbox import Mailbox
from rocketmq_actors.runtime.router import Inbound

from .health import Health, instance_health
from .instance import ClientInstance
from .options import ClientOptions
from .shared import InstanceLease, lease_instance

__all__ = ["MEMBER_POLICY", "NAMESRV_ENV", "GroupMember"]

NAMESRV_ENV = "NAMESRV_ADDR"

#: a member's own actors (mailbox, rebalancer, consume service, persister, lock keeper,
#: senders): restarted after an unexpected error, up to 5 times a minute, then the member
#: stops with SupervisorGaveUp
MEMBER_POLICY = RestartPolicy(
    max_restarts=5, period=60.0, backoff_initial=0.5, backoff_max=10.0, escalate=True
)


class GroupMember(Lifecycle):
    #: whether readiness needs a connected master for every known route (producers: a
    #: route without one can take no send)
    ready_needs_brokers = False

    def __init__(
        self,
        *,
        kind: str,
        group: str,
        namesrv: str | Sequence[str] | None,
        instance: ClientInstance | None,
        client: ClientOptions,
    ) -> None:
        super().__init__(shutdown_timeout=client.shutdown_timeout, on_error=client.on_error)
        if namesrv is not None and client.namesrv is not None:
            raise ConfigError("give the NameServer once: namesrv=... or ClientOptions(namesrv=...)")
        if namesrv is None:
            namesrv = client.namesrv
        if instance is not None and (
            namesrv is not None
            or client.ssl_context is not None
            or client.credentials is not None
            or client.instance_name is not None
        ):
            raise ConfigError(
                "namesrv, ssl_context, credentials and instance_name belong to the shared "
                "ClientInstance"
            )
        if instance is None and namesrv is None:
            namesrv = os.environ.get(NAMESRV_ENV) or None  # as the Java client reads it
        if instance is None and namesrv is None:
            raise ConfigError(
                f"give a NameServer address (namesrv=... or ${NAMESRV_ENV}) or a ClientInstance"
            )
        self.kind = kind
        self.group = wrap(client.namespace, group)  # as the broker knows it
        self._client = client
        # without an instance given: the process's shared one for these settings (shared.py)
        self._lease: InstanceLease | None = None
        if instance is None:
            addrs = namesrv or ()
            self._lease = lease_instance(
                self, kind="producer" if kind == "producer" else "consumer", group=self.group,
                namesrv=addrs, client=client, factory=lambda: ClientInstance(
                    addrs, ssl_context=client.ssl_context, credentials=client.credentials,
                    instance_name=client.instance_name, request_timeout=client.request_timeout,
                ),
            )  # fmt: skip
            instance = self._lease.instance
        self._instance = instance
        self.mailbox: Mailbox[Inbound] = Mailbox(f"{kind}:{group}")

    @property
    def instance(self) -> ClientInstance:
        return self._instance

    def health(self) -> Health:
        """For readiness probes: this client's lifecycle state, the NameServer (reachable,
        last answer), the brokers it knows (connection state, version) and its routes (age);
        ``ready`` and, when not, the reasons. ``as_dict()`` gives JSON types."""
        state = self.state.value
        if state == "running" and not self._instance.running:
            state = self._instance.state.value  # (a shared instance stopped under us)
        return instance_health(self._instance, kind=self.kind, group=self.group, state=state,
                               needs_brokers=self.ready_needs_brokers)  # fmt: skip

    @property
    def ready(self) -> bool:
        """Running, a NameServer answered its last request, and (producers) every known
        route has a connected master: :meth:`health` says why not."""
        return self.health().ready

    def _describe(self) -> str:
        return f"{type(self).__name__}({self.group})"

    async def _join(
        self,
        stack: AsyncExitStack,
        register: Callable[[], None],
        unregister: Callable[[str], Awaitable[None]],
    ) -> None:
        """Run the instance if it is ours (a shared one must be running), register the group,
        and undo both on exit (the mailbox is disposed once everything opened after this step
        has closed). The instance stopping under a running member stops the member."""
        instance = self._instance
        if self._lease is not None:
            stack.push_async_callback(self._stop_instance)
            await self._lease.join()
        else:
            instance._check_running()
        instance._link(self, self._instance_stopped)
        stack.callback(instance._unlink, self)
        register()
        stack.push_async_callback(unregister, self.group)
        stack.callback(self.mailbox.dispose)

    async def _stop_instance(self) -> None:
        """Our lease of the shared instance ends; the last lease stops it, within what is left
        of our stop deadline, waiting for it even when our own unwinding is cancelled, so that
        it never outlives its last member."""
        self._instance._unlink(self)
        assert self._lease is not None
        if self._lease.release():
            with anyio.CancelScope(shield=True):
                await self._instance._stop_and_wait(self._time_left())

    def _instance_stopped(self, error: BaseException | None) -> None:
        if self._host is not None and self._host.cancelling():
            return  # our own host is being cancelled too (the event loop is closing)
        closed = ClientClosed(f"the ClientInstance of {self._describe()} stopped")
        closed.__cause__ = error
        self._fail(closed)
