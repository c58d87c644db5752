"""Queue allocation strategies: which queues of a topic this consumer takes in its group.

Pure functions of (all queues, all client ids, my id). Every member of a group computes its own
share, so every member must use the same strategy *and* compute exactly what the Java client
computes: the tests hold each strategy to vectors produced by the Java client's own classes
(``tests/consumer/fixtures/AllocateVectors.java``).

Both lists are sorted first in Java's order: queues by (topic, broker name, queue id), client
ids as strings, comparing strings by UTF-16 code units as ``String.compareTo`` does.
"""

from __future__ import annotations

import bisect
import enum
import hashlib
from collections.abc import Callable, Sequence

from rocketmq_actors.protocol.bodies import MessageQueue

__all__ = [
    "AllocateStrategy",
    "Strategy",
    "allocate",
    "averagely",
    "averagely_by_circle",
    "consistent_hash",
]

AllocateStrategy = Callable[[Sequence[MessageQueue], Sequence[str], str], list[MessageQueue]]


def _java_key(text: str) -> bytes:
    """Orders strings as Java's ``String.compareTo`` (UTF-16 code units)."""
    return text.encode("utf-16-be")


def _sorted(queues: Sequence[MessageQueue], clients: Sequence[str]) -> tuple[
    list[MessageQueue], list[str]
]:  # fmt: skip
    mqs = sorted(queues, key=lambda q: (_java_key(q.topic), _java_key(q.broker_name), q.queue_id))
    return mqs, sorted(set(clients), key=_java_key)


def averagely(
    queues: Sequence[MessageQueue], clients: Sequence[str], me: str
) -> list[MessageQueue]:
    """Contiguous blocks: the first ``n % c`` clients get one queue more (Java's default)."""
    mqs, cids = _sorted(queues, clients)
    if me not in cids or not mqs:
        return []
    n, c, i = len(mqs), len(cids), cids.index(me)
    mod = n % c
    if n <= c:
        size = 1
    elif mod > 0 and i < mod:
        size = n // c + 1
    else:
        size = n // c
    start = i * size if (mod > 0 and i < mod) else i * size + mod
    count = min(size, n - start)
    return mqs[start : start + count] if count > 0 else []


def averagely_by_circle(
    queues: Sequence[MessageQueue], clients: Sequence[str], me: str
) -> list[MessageQueue]:
    """Dealt like cards: queue *k* goes to client ``k % c``."""
    mqs, cids = _sorted(queues, clients)
    if me not in cids:
        return []
    i, c = cids.index(me), len(cids)
    return [mq for k, mq in enumerate(mqs) if k % c == i]


def _md5_32(text: str) -> int:
    return int.from_bytes(hashlib.md5(text.encode()).digest()[:4], "big")


def consistent_hash(
    queues: Sequence[MessageQueue], clients: Sequence[str], me: str, *, virtual_nodes: int = 10
) -> list[MessageQueue]:
    """Java's consistent hashing: ``virtual_nodes`` ring points per client (``<id>-<k>``,
    MD5's first 4 bytes, later insertion wins a collision); a queue belongs to the first point
    at or after the hash of its Java ``toString()``, wrapping around."""
    mqs, cids = _sorted(queues, clients)
    if me not in cids:
        return []
    ring: dict[int, str] = {}
    for cid in cids:
        for k in range(virtual_nodes):
            ring[_md5_32(f"{cid}-{k}")] = cid
    points = sorted(ring)
    mine: list[MessageQueue] = []
    for mq in mqs:
        key = f"MessageQueue [topic={mq.topic}, brokerName={mq.broker_name}, queueId={mq.queue_id}]"
        at = bisect.bisect_left(points, _md5_32(key))
        if ring[points[at % len(points)]] == me:
            mine.append(mq)
    return mine


class Strategy(enum.Enum):
    """The Java client's queue allocation strategies (``AllocateMessageQueueAveragely``,
    ``...AveragelyByCircle``, ``...ConsistentHash``) by name."""

    AVG = "AVG"
    AVG_BY_CIRCLE = "AVG_BY_CIRCLE"
    CONSISTENT_HASH = "CONSISTENT_HASH"


_STRATEGIES: dict[Strategy, AllocateStrategy] = {
    Strategy.AVG: averagely,
    Strategy.AVG_BY_CIRCLE: averagely_by_circle,
    Strategy.CONSISTENT_HASH: consistent_hash,
}


def allocate(
    strategy: Strategy, queues: Sequence[MessageQueue], clients: Sequence[str], me: str
) -> list[MessageQueue]:
    return _STRATEGIES[strategy](queues, clients, me)
