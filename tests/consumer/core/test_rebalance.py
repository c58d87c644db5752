"""Allocation strategies: the Java client's own answers, worked examples, and properties."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_actors.consumer.core.rebalance import (
    Strategy,
    allocate,
    averagely,
    averagely_by_circle,
)
from rocketmq_actors.protocol.bodies import MessageQueue

ALL_VECTORS = json.loads(
    (Path(__file__).parents[1] / "fixtures" / "allocate_vectors.json").read_text()
)
# the list-only strategies (the others, with their own queues, in test_strategies.py)
VECTORS = [v for v in ALL_VECTORS if "mq" not in v]


def _queues(n: int) -> list[MessageQueue]:
    """The queue layout AllocateVectors.java builds: half on broker-a (+ the odd one), half on b."""
    a = n // 2 + n % 2
    return [MessageQueue("TopicTest", "broker-a", q) for q in range(a)] + [
        MessageQueue("TopicTest", "broker-b", q) for q in range(n // 2)
    ]


@pytest.mark.parametrize(
    "vector", VECTORS, ids=[f"{v['strategy']}-{v['queues']}q-{v['me']}" for v in VECTORS]
)
def test_matches_the_java_client(vector: dict[str, Any]) -> None:
    queues = _queues(vector["queues"])
    clients = list(reversed(vector["clients"]))  # input order must not matter
    got = allocate(Strategy(vector["strategy"]), queues, clients, vector["me"])
    assert [[q.broker_name, q.queue_id] for q in got] == vector["allocated"]


def test_vectors_cover_every_strategy() -> None:
    assert {v["strategy"] for v in VECTORS} == {s.value for s in Strategy}
    assert len(VECTORS) == 102


def test_worked_example_from_the_protocol_notes() -> None:
    queues = [MessageQueue("t", "b", i) for i in range(8)]
    clients = ["c0", "c1", "c2"]
    assert [[q.queue_id for q in averagely(queues, clients, c)] for c in clients] == [
        [0, 1, 2], [3, 4, 5], [6, 7],
    ]  # fmt: skip
    assert [[q.queue_id for q in averagely_by_circle(queues, clients, c)] for c in clients] == [
        [0, 3, 6], [1, 4, 7], [2, 5],
    ]  # fmt: skip


def test_a_client_not_in_the_list_gets_nothing() -> None:
    queues = [MessageQueue("t", "b", i) for i in range(4)]
    for strategy in Strategy:
        assert allocate(strategy, queues, ["a", "b"], "stranger") == []


_ids = st.lists(st.text("abcdef@#.0123456789", min_size=1, max_size=8), min_size=1, max_size=9,
                unique=True)  # fmt: skip


@pytest.mark.parametrize("strategy", list(Strategy))
@given(n=st.integers(0, 40), clients=_ids)
def test_every_queue_has_exactly_one_owner(strategy: Strategy, n: int, clients: list[str]) -> None:
    queues = [MessageQueue("t", f"b{i % 3}", i) for i in range(n)]
    owners = Counter(q for c in clients for q in allocate(strategy, queues, clients, c))
    assert set(owners) == set(queues) and set(owners.values()) <= {1}


@pytest.mark.parametrize("strategy", [Strategy.AVG, Strategy.AVG_BY_CIRCLE])
@given(n=st.integers(0, 40), clients=_ids)
def test_even_strategies_differ_by_at_most_one(
    strategy: Strategy, n: int, clients: list[str]
) -> None:
    queues = [MessageQueue("t", "b", i) for i in range(n)]
    sizes = [len(allocate(strategy, queues, clients, c)) for c in clients]
    assert max(sizes) - min(sizes) <= 1


@given(n=st.integers(1, 40), clients=_ids, newcomer=st.text("xyz", min_size=1, max_size=5))
def test_consistent_hash_moves_queues_only_to_the_newcomer(
    n: int, clients: list[str], newcomer: str
) -> None:
    if newcomer in clients:
        return
    queues = [MessageQueue("t", "b", i) for i in range(n)]
    before = {q: c for c in clients for q in allocate(Strategy.CONSISTENT_HASH, queues, clients, c)}
    grown = [*clients, newcomer]
    after = {q: c for c in grown for q in allocate(Strategy.CONSISTENT_HASH, queues, grown, c)}
    assert all(after[q] in (before[q], newcomer) for q in queues)
