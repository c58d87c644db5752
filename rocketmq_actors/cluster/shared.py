"""One ClientInstance per NameServer set and instance name in a process, as Java's
``MQClientManager`` keeps one ``MQClientInstance`` per client id.

A producer or consumer built without an ``instance=`` leases the instance of its key (the
NameServer addresses, the instance name and the instance's own settings: TLS, credentials,
request timeout; and the event loop running when it is built). The first member to start
starts it; it stops when the last lease ends: its member stops, or a member that never started
is collected. A member whose group is already leased on the instance of its key (two consumers
of one group, as a test of a rebalance has) gets an instance of its own, as two Java clients of
one group in a JVM have distinct instance names. A distinct ``instance_name`` opts out.
"""

from __future__ import annotations

import collections
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from rocketmq_actors.runtime.backend import current_loop
from rocketmq_actors.runtime.lifecycle import State

from .instance import ClientInstance
from .options import ClientOptions

__all__ = ["InstanceLease", "lease_instance"]

_lock = threading.Lock()
#: key -> the entries of that key (one per set of disjoint groups)
_entries: dict[tuple[Any, ...], list[_Entry]] = {}
#: leases of members collected without stopping, ended by _drain (see _finalize)
_orphans: collections.deque[InstanceLease] = collections.deque()
_JOINABLE = (State.NEW, State.STARTING, State.RUNNING)


class _Entry:
    def __init__(self, key: tuple[Any, ...], instance: ClientInstance) -> None:
        self.key = key
        self.instance = instance
        self.groups: set[tuple[str, str]] = set()
        self.leases = 0


class InstanceLease:
    """A member's share of a shared instance: :meth:`join` when it starts (the first starts
    the instance), :meth:`release` when it stops (the last stops it)."""

    def __init__(self, entry: _Entry, member_key: tuple[str, str]) -> None:
        self._entry = entry
        self._member_key = member_key
        self._released = False

    @property
    def instance(self) -> ClientInstance:
        return self._entry.instance

    async def join(self) -> None:
        """Start the instance, or join its start under way, or check that it runs."""
        await self._entry.instance.start()

    def release(self) -> bool:
        """End this lease; True when it was the last (the caller stops the instance)."""
        with _lock:
            if self._released:
                return False
            self._released = True
            entry = self._entry
            entry.leases -= 1
            entry.groups.discard(self._member_key)
            if entry.leases > 0:
                return False
            siblings = _entries.get(entry.key, [])
            if entry in siblings:
                siblings.remove(entry)
            if not siblings:
                _entries.pop(entry.key, None)
            return True


def _loop_id() -> int | None:
    loop = current_loop()  # (trio's: one per run, kept by the run)
    return None if loop is None else id(loop)


def _key(namesrv: str | Sequence[str], client: ClientOptions) -> tuple[Any, ...]:
    addrs = (namesrv,) if isinstance(namesrv, str) else tuple(namesrv)
    credentials: Any = client.credentials
    return (
        addrs,
        client.instance_name,
        id(client.ssl_context) if client.ssl_context is not None else None,
        credentials,
        client.request_timeout,
        _loop_id(),
    )


def _finalize(lease: InstanceLease) -> None:
    """A member collected without stopping (a garbage collection may run this at any point,
    this module's own locked sections included): its lease is queued for :func:`_drain`, run
    soon on the instance's event loop when it runs, else by the next lease."""
    _orphans.append(lease)
    instance = lease.instance
    loop = instance._loop
    if instance.state in (State.STARTING, State.RUNNING) and loop and not loop.is_closed():
        loop.call_soon_threadsafe(_drain)


def _drain() -> None:
    """End the leases of collected members; an instance whose last lease that was is asked to
    stop, on its event loop (which may be another thread's)."""
    while True:
        try:
            lease = _orphans.popleft()
        except IndexError:
            return
        instance = lease.instance
        if lease.release() and instance.state in (State.STARTING, State.RUNNING):
            loop = instance._loop
            if loop is not None and not loop.is_closed():
                loop.call_soon_threadsafe(instance._request_stop)


def lease_instance(
    owner: object,
    *,
    kind: str,
    group: str,
    namesrv: str | Sequence[str],
    client: ClientOptions,
    factory: Callable[[], ClientInstance],
) -> InstanceLease:
    """``owner``'s lease of the shared instance for ``namesrv`` and ``client`` (made with
    ``factory`` when there is none that ``group`` of ``kind`` may join); ended at the latest
    when ``owner`` is collected."""
    _drain()
    key = _key(namesrv, client)
    member_key = (kind, group)
    created: ClientInstance | None = None
    while True:
        with _lock:
            siblings = _entries.get(key, [])
            entry = next(
                (e for e in siblings
                 if member_key not in e.groups and e.instance.state in _JOINABLE),
                None,
            )  # fmt: skip
            if entry is None and created is not None:
                entry = _Entry(key, created)
                _entries[key] = [*siblings, entry]
            if entry is not None:
                entry.groups.add(member_key)
                entry.leases += 1
                lease = InstanceLease(entry, member_key)
                break
        # outside the lock: building an instance allocates, and a collection may run then
        created = factory()  # (a bad setting raises here, nothing kept)
    weakref.finalize(owner, _finalize, lease).atexit = False
    return lease
