"""Allocation strategies beyond the three list-only ones of :mod:`.rebalance`, and the checked
call through which the rebalancer uses any of them.

A consumer's ``strategy`` option takes a :class:`~.rebalance.Strategy` or a callable with the
inputs of Java's ``AllocateMessageQueueStrategy.allocate``: ``(consumer group, my client id,
all queues, all client ids) -> my queues``. The three classes here are such callables, each
computing what its Java namesake (``org.apache.rocketmq.client.consumer.rebalance``) computes
for the same inputs (``tests/consumer/fixtures/AllocateVectors.java``):

* :class:`MachineRoomNearby` (``AllocateMachineRoomNearby``): the queues of a machine room go
  to the consumers in that room, through another strategy; the queues of a room without
  consumers are shared by all;
* :class:`ByMachineRoom` (``AllocateMessageQueueByMachineRoom``): only the queues of brokers
  named ``<idc>@<name>`` whose idc is one of ``consume_idcs``, spread over all consumers;
* :class:`ByConfig` (``AllocateMessageQueueByConfig``): a fixed list of queues.

Whatever a strategy returns is checked (:func:`allocate_checked`): a result that is not a list
of the topic's queues, or an exception, is an :class:`~rocketmq_actors.errors.AllocationFailed`,
and the rebalancer keeps the topic's previous assignment and tries again at its next round.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import cast

import attrs

from rocketmq_actors.consumer.core.rebalance import Strategy, _java_key, _sorted, allocate
from rocketmq_actors.errors import AllocationFailed, ConfigError
from rocketmq_actors.protocol.bodies import MessageQueue

__all__ = [
    "Allocator",
    "ByConfig",
    "ByMachineRoom",
    "MachineRoomNearby",
    "StrategyOption",
    "allocate_checked",
    "as_allocator",
]

#: Java's ``AllocateMessageQueueStrategy.allocate``: (consumer group, my client id, all the
#: topic's queues, all the group's client ids, both sorted as Java sorts them) -> my queues
Allocator = Callable[[str, str, Sequence[MessageQueue], Sequence[str]], Sequence[MessageQueue]]
#: what a consumer's ``strategy`` option takes
StrategyOption = Strategy | Allocator


def as_allocator(strategy: object, *, field: str = "strategy") -> Allocator:
    """The option as an :data:`Allocator`; :class:`ConfigError` naming ``field`` otherwise."""
    if isinstance(strategy, Strategy):
        return _Builtin(strategy)
    if callable(strategy) and not isinstance(strategy, type):
        return cast(Allocator, strategy)
    raise ConfigError(
        f"{field} must be a Strategy or a callable (group, client_id, queues, client_ids) -> "
        f"queues, not {type(strategy).__name__}"
    )


@attrs.frozen
class _Builtin:
    """A :class:`~.rebalance.Strategy` in Java's call shape."""

    strategy: Strategy

    def __call__(
        self, group: str, me: str, queues: Sequence[MessageQueue], clients: Sequence[str]
    ) -> list[MessageQueue]:
        return allocate(self.strategy, queues, clients, me)


def _room(resolve: Callable[[str], object], name: str, what: str) -> str:
    room = resolve(name)
    if not isinstance(room, str) or not room:  # Java: IllegalArgumentException
        raise AllocationFailed(f"machine room of {what} {name!r} is {room!r}, not a room name")
    return room


@attrs.frozen(kw_only=True)
class MachineRoomNearby:
    """Java's ``AllocateMachineRoomNearby``: ``inner`` (a :class:`~.rebalance.Strategy` or an
    :data:`Allocator`) allocates each machine room's queues among the consumers in that room;
    the queues of rooms without a consumer are allocated among all consumers. ``broker_room``
    maps a broker name to its room, ``consumer_room`` a client id to its room (Java's
    ``MachineRoomResolver``); an empty or non-str room fails the allocation."""

    inner: StrategyOption
    broker_room: Callable[[str], str]
    consumer_room: Callable[[str], str]

    def __attrs_post_init__(self) -> None:
        as_allocator(self.inner, field="MachineRoomNearby inner")
        for name in ("broker_room", "consumer_room"):
            if not callable(getattr(self, name)):
                raise ConfigError(f"MachineRoomNearby {name} must be callable (name -> room)")

    def __call__(
        self, group: str, me: str, queues: Sequence[MessageQueue], clients: Sequence[str]
    ) -> list[MessageQueue]:
        mqs, cids = _sorted(queues, clients)
        if me not in cids or not mqs:
            return []
        inner = as_allocator(self.inner)
        by_room: dict[str, list[MessageQueue]] = {}
        for mq in mqs:
            by_room.setdefault(_room(self.broker_room, mq.broker_name, "broker"), []).append(mq)
        members: dict[str, list[str]] = {}
        for cid in cids:
            members.setdefault(_room(self.consumer_room, cid, "client"), []).append(cid)
        mine: list[MessageQueue] = []
        here = _room(self.consumer_room, me, "client")
        if by_room.get(here):
            mine += inner(group, me, by_room.pop(here), members[here])
        for room in sorted(by_room, key=_java_key):  # (Java: a TreeMap of rooms)
            if room not in members:  # nobody there: everyone shares them
                mine += inner(group, me, by_room[room], cids)
        return mine


def _idcs(value: object) -> frozenset[str]:
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise ConfigError("ByMachineRoom consume_idcs must be a collection of idc names")
    idcs = frozenset(value)
    if not all(isinstance(i, str) for i in idcs):
        raise ConfigError("ByMachineRoom consume_idcs must be a collection of idc names")
    return idcs


@attrs.frozen
class ByMachineRoom:
    """Java's ``AllocateMessageQueueByMachineRoom``: the queues of brokers named
    ``<idc>@<name>`` with ``<idc>`` in ``consume_idcs`` (other brokers' are never taken), in
    blocks of ``len // consumers``, the remainder dealt one each to the first consumers."""

    consume_idcs: frozenset[str] = attrs.field(converter=_idcs)

    def __call__(
        self, group: str, me: str, queues: Sequence[MessageQueue], clients: Sequence[str]
    ) -> list[MessageQueue]:
        mqs, cids = _sorted(queues, clients)
        if me not in cids or not mqs:
            return []
        index, count = cids.index(me), len(cids)
        chosen = [mq for mq in mqs if _idc(mq.broker_name) in self.consume_idcs]
        block, rest = divmod(len(chosen), count)
        mine = chosen[block * index : block * (index + 1)]
        if rest > index:
            mine.append(chosen[index + block * count])
        return mine


def _idc(broker_name: str) -> str | None:
    parts = broker_name.split("@")  # (Java's split drops trailing empty parts)
    while parts and not parts[-1]:
        parts.pop()
    return parts[0] if len(parts) == 2 else None


def _queue_list(value: Iterable[MessageQueue]) -> tuple[MessageQueue, ...]:
    queues = tuple(value) if isinstance(value, Iterable) else ()
    if (not queues and value) or not all(isinstance(q, MessageQueue) for q in queues):
        raise ConfigError("ByConfig queues must be MessageQueue values")
    return queues


@attrs.frozen
class ByConfig:
    """Java's ``AllocateMessageQueueByConfig``: the same fixed ``queues`` for every consumer,
    in their order. Unlike Java, a queue that is not (or no longer) in the topic's route is
    left out, rather than returned for the rebalancer to refuse."""

    queues: tuple[MessageQueue, ...] = attrs.field(converter=_queue_list)

    def __call__(
        self, group: str, me: str, queues: Sequence[MessageQueue], clients: Sequence[str]
    ) -> list[MessageQueue]:
        present = set(queues)
        return [q for q in self.queues if q in present]


def allocate_checked(
    strategy: Allocator,
    group: str,
    me: str,
    queues: Sequence[MessageQueue],
    clients: Sequence[str],
) -> list[MessageQueue]:
    """``strategy``'s answer for one topic (both lists sorted as Java sorts them first), checked:
    :class:`AllocationFailed` when it raises, or returns anything but a list, tuple or set of
    that topic's queues. Duplicates are dropped."""
    mqs, cids = _sorted(queues, clients)
    topic = mqs[0].topic if mqs else "-"
    try:
        result = strategy(group, me, mqs, cids)
    except Exception as exc:  # a user's strategy: any failure keeps the previous assignment
        raise AllocationFailed(f"strategy {_name(strategy)} raised {exc!r} for {topic}") from exc
    if not isinstance(result, (list, tuple, set, frozenset)):
        raise AllocationFailed(
            f"strategy {_name(strategy)} returned {type(result).__name__} for {topic}, not a "
            f"list of MessageQueue"
        )
    return _checked(result, set(mqs), strategy, topic)


def _checked(
    result: Iterable[object], known: set[MessageQueue], strategy: Allocator, topic: str
) -> list[MessageQueue]:
    mine: list[MessageQueue] = []
    seen: set[MessageQueue] = set()
    for item in result:
        if not isinstance(item, MessageQueue):
            raise AllocationFailed(
                f"strategy {_name(strategy)} returned a {type(item).__name__} for {topic}, "
                f"not a MessageQueue"
            )
        if item not in known:
            raise AllocationFailed(
                f"strategy {_name(strategy)} returned {item}, not a queue of {topic}"
            )
        if item not in seen:
            seen.add(item)
            mine.append(item)
    return mine


def _name(strategy: object) -> str:
    if isinstance(strategy, _Builtin):
        return strategy.strategy.value
    return getattr(strategy, "__qualname__", None) or type(strategy).__name__
