"""Choosing a queue: round robin weighted by write queues, by sharding key, latency fault
tolerance."""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Sequence
from typing import Protocol

import attrs

from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.messages import Message, java_string_hash

__all__ = ["LatencyFaultTolerance", "QueueSelector", "RoundRobin", "select_by_key"]


class QueueSelector(Protocol):
    """Ordered sends: pick the queue for ``message`` (``arg`` is the caller's routing value)."""

    def __call__(
        self, queues: Sequence[MessageQueue], message: Message, arg: object
    ) -> MessageQueue: ...


def select_by_key(queues: Sequence[MessageQueue], message: Message, arg: object) -> MessageQueue:
    """The Java client's hash selector: Java ``String.hashCode`` of the key, truncating
    remainder by the queue count, absolute value. Same key, same queue - across clients in
    any language that use the same rule."""
    remainder = int(math.fmod(java_string_hash(str(arg)), len(queues)))  # Java's %: sign of h
    return queues[abs(remainder)]


# Java's latency thresholds (ms) and the isolation each earns (ms).
_LATENCY_STEPS = (50, 100, 550, 1800, 3000, 5000, 15000)
_ISOLATION = (0, 0, 2000, 5000, 6000, 10000, 30000)


@attrs.define
class LatencyFaultTolerance:
    """Keeps slow or failing brokers out of rotation for a while (off by default, as in Java).

    After each attempt the broker's latency maps to an isolation period; a failed attempt
    counts as 10 s of latency. While isolated, a broker is chosen only if nothing else is left.
    """

    enabled: bool = False
    clock: Callable[[], float] = time.monotonic
    #: broker -> when it may be chosen again (empty: none is isolated)
    available_at: dict[str, float] = attrs.field(factory=dict)

    def record(self, broker: str, latency_ms: float, *, failed: bool = False) -> None:
        if not self.enabled:
            return
        latency = 10000.0 if failed else latency_ms
        isolation = 0
        for step, iso in zip(_LATENCY_STEPS, _ISOLATION, strict=True):
            if latency >= step:
                isolation = iso
        if isolation:
            self.available_at[broker] = self.clock() + isolation / 1000
        else:  # fast enough: not isolated (an earlier isolation ends), nothing to keep
            self.available_at.pop(broker, None)

    def available(self, broker: str) -> bool:
        until = self.available_at.get(broker)
        if until is None:
            return True
        if until <= self.clock():  # (served: forgotten, so round robin's fast path returns)
            del self.available_at[broker]
            return True
        return False


class RoundRobin:
    """Round robin over the publish queues (so brokers are weighted by their write queues),
    starting at a random point; retries avoid the broker that just failed, and isolated
    brokers are skipped while others remain."""

    def __init__(self, faults: LatencyFaultTolerance) -> None:
        self._counter = random.randrange(1 << 16)
        self._faults = faults

    def choose(self, queues: Sequence[MessageQueue], avoid: str | None = None) -> MessageQueue:
        count = len(queues)
        if avoid is None and not self._faults.available_at:  # (nothing to skip: the common case)
            self._counter += 1
            return queues[self._counter % count]
        for _ in range(count):
            self._counter += 1
            queue = queues[self._counter % count]
            if queue.broker_name != avoid and self._faults.available(queue.broker_name):
                return queue
        for _ in range(count):  # everything isolated or avoided: any other broker, then any
            self._counter += 1
            queue = queues[self._counter % count]
            if queue.broker_name != avoid:
                return queue
        self._counter += 1
        return queues[self._counter % count]
