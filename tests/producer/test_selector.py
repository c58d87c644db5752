from __future__ import annotations

from collections import Counter

import pytest

from rocketmq_actors.producer.selector import LatencyFaultTolerance, RoundRobin, select_by_key
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.messages import Message

QUEUES = [MessageQueue("t", b, i) for b in ("a", "b") for i in range(4)] + [
    MessageQueue("t", "c", 0)
]
MSG = Message(topic="t", body=b"x")


def test_select_by_key_matches_javas_hash_selector() -> None:
    # Java 17: "user-42".hashCode() == -147182656; -147182656 % 9 == -4; abs -> queue 4
    assert select_by_key(QUEUES, MSG, "user-42") == QUEUES[4]
    assert select_by_key(QUEUES[:4], MSG, "user-42") == QUEUES[0]  # -147182656 % 4 == 0


def test_round_robin_is_weighted_by_write_queues() -> None:
    rr = RoundRobin(LatencyFaultTolerance())
    counts = Counter(rr.choose(QUEUES).broker_name for _ in range(900))
    assert counts == {"a": 400, "b": 400, "c": 100}


def test_round_robin_avoids_the_failed_broker() -> None:
    rr = RoundRobin(LatencyFaultTolerance())
    assert all(rr.choose(QUEUES, avoid="a").broker_name != "a" for _ in range(50))
    only_a = [q for q in QUEUES if q.broker_name == "a"]
    assert rr.choose(only_a, avoid="a").broker_name == "a"  # nothing else left


def test_latency_fault_tolerance_isolates_slow_and_failed_brokers() -> None:
    now = [100.0]
    faults = LatencyFaultTolerance(enabled=True, clock=lambda: now[0])
    faults.record("a", 600)  # 550 ms step: 2 s out
    faults.record("b", 0, failed=True)  # failure counts as 10 s latency: 30 s out
    faults.record("c", 40)
    assert (faults.available("a"), faults.available("b"), faults.available("c")) == (
        False, False, True,
    )  # fmt: skip
    rr = RoundRobin(faults)
    assert {rr.choose(QUEUES).broker_name for _ in range(20)} == {"c"}
    now[0] += 2.5
    assert faults.available("a") and not faults.available("b")


def test_a_fast_answer_keeps_nothing_and_ends_an_isolation() -> None:
    """A latency below every step isolates nothing: nothing is kept, so round robin keeps
    its check-free path while fault tolerance is on; and the broker is available at once."""
    now = [100.0]
    faults = LatencyFaultTolerance(enabled=True, clock=lambda: now[0])
    faults.record("a", 40)
    assert faults.available_at == {}
    faults.record("b", 600)  # 2 s out ...
    faults.record("b", 40)  # ... until an answer in time
    assert faults.available_at == {} and faults.available("b")


def test_fault_tolerance_is_off_by_default() -> None:
    faults = LatencyFaultTolerance()
    faults.record("a", 0, failed=True)
    assert faults.available("a")


def test_an_isolation_served_is_forgotten(monkeypatch: pytest.MonkeyPatch) -> None:
    """An expired isolation is dropped when it is next asked about, so round robin's
    check-free path (nothing isolated) comes back after a fault."""
    now = [100.0]
    faults = LatencyFaultTolerance(enabled=True, clock=lambda: now[0])
    faults.record("a", 600)  # 2 s out
    assert not faults.available("a") and set(faults.available_at) == {"a"}
    now[0] += 2.5
    assert faults.available("a") and faults.available_at == {}
    rr = RoundRobin(faults)

    def asked(self: LatencyFaultTolerance, broker: str) -> bool:
        raise AssertionError("nothing is isolated: round robin asks about no broker")

    monkeypatch.setattr(LatencyFaultTolerance, "available", asked)  # (the check-free path)
    assert [rr.choose(QUEUES).broker_name for _ in range(9)].count("c") == 1
