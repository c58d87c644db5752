"""The strategies with parameters (machine room nearby, by machine room, by config) against the
Java client's own answers (fixtures/AllocateVectors.java), and the checks every strategy's
answer goes through - a user's callable above all."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest

from rocketmq_actors.consumer.core.rebalance import Strategy
from rocketmq_actors.consumer.core.strategies import (
    ByConfig,
    ByMachineRoom,
    MachineRoomNearby,
    allocate_checked,
    as_allocator,
)
from rocketmq_actors.consumer.pull import PullOptions
from rocketmq_actors.consumer.push import PushOptions
from rocketmq_actors.errors import AllocationFailed, ConfigError
from rocketmq_actors.protocol.bodies import MessageQueue

from .test_rebalance import ALL_VECTORS

VECTORS = [v for v in ALL_VECTORS if "mq" in v]


def _queues(pairs: list[list[Any]]) -> list[MessageQueue]:
    return [MessageQueue("TopicTest", broker, queue_id) for broker, queue_id in pairs]


def _java_strategy(vector: dict[str, Any]) -> Any:
    """The strategy AllocateVectors.java used for ``vector``."""
    name: str = vector["strategy"]
    if name.startswith("MACHINE_ROOM_NEARBY-"):
        return MachineRoomNearby(
            inner=Strategy(name.removeprefix("MACHINE_ROOM_NEARBY-")),
            broker_room=lambda broker: broker.split("-")[0],
            consumer_room=lambda cid: cid.rsplit("#", 1)[1],
        )
    if name == "MACHINE_ROOM":
        return ByMachineRoom(vector["idcs"])
    assert name == "CONFIG"
    return ByConfig(_queues(vector["config"]))


@pytest.mark.parametrize(
    "vector", VECTORS, ids=[f"{v['strategy']}-{v['queues']}q-{v['me']}" for v in VECTORS]
)
def test_matches_the_java_client(vector: dict[str, Any]) -> None:
    queues = list(reversed(_queues(vector["mq"])))  # input order must not matter
    clients = list(reversed(vector["clients"]))
    strategy = _java_strategy(vector)
    got = allocate_checked(strategy, "G", vector["me"], queues, clients)
    assert [[q.broker_name, q.queue_id] for q in got] == vector["allocated"]


def test_vectors_cover_every_parameterised_strategy() -> None:
    names = Counter(v["strategy"] for v in VECTORS)
    assert set(names) == {*(f"MACHINE_ROOM_NEARBY-{s.value}" for s in Strategy),
                          "MACHINE_ROOM", "CONFIG"}  # fmt: skip
    assert len(VECTORS) == 65 and len(ALL_VECTORS) == 167


def test_nearby_shares_each_room_once() -> None:
    """Every queue has one owner: a room's own consumers, or everyone when it has none."""
    queues = [MessageQueue("t", f"{room}-b{i}", q) for room in ("hz", "sh", "bj")
              for i in range(2) for q in range(3)]  # fmt: skip
    clients = ["c1#hz", "c2#hz", "c3#sh", "c4#gz"]
    nearby = MachineRoomNearby(inner=Strategy.AVG, broker_room=lambda b: b.split("-")[0],
                               consumer_room=lambda c: c.split("#")[1])  # fmt: skip
    owners = {c: allocate_checked(nearby, "G", c, queues, clients) for c in clients}
    counted = Counter(q for mine in owners.values() for q in mine)
    assert set(counted) == set(queues) and set(counted.values()) == {1}
    room = {q for q in queues if q.broker_name.startswith("sh")}
    assert room <= set(owners["c3#sh"])  # its room's queues: all its own
    assert not any(q.broker_name.startswith(("hz", "sh")) for q in owners["c4#gz"])


def test_a_room_that_is_not_a_name_fails_the_allocation() -> None:
    nearby = MachineRoomNearby(inner=Strategy.AVG, broker_room=lambda b: "",
                               consumer_room=lambda c: "hz")  # fmt: skip
    with pytest.raises(AllocationFailed, match="machine room of broker 'b' is ''"):
        allocate_checked(nearby, "G", "c", [MessageQueue("t", "b", 0)], ["c"])


def _user(result: object) -> Any:
    def strategy(
        group: str, me: str, queues: Sequence[MessageQueue], clients: Sequence[str]
    ) -> Any:
        if isinstance(result, Exception):
            raise result
        return result

    return strategy


QUEUES = [MessageQueue("t", "b", i) for i in range(4)]


def test_a_user_strategy_gets_javas_inputs_sorted() -> None:
    seen: list[tuple[str, str, list[MessageQueue], list[str]]] = []

    def mine(group: str, me: str, queues: Sequence[MessageQueue], clients: Sequence[str]) -> Any:
        seen.append((group, me, list(queues), list(clients)))
        return [queues[-1], queues[-1], queues[0]]  # a duplicate is dropped

    got = allocate_checked(mine, "G", "c2", list(reversed(QUEUES)), ["c2", "c1"])
    assert got == [QUEUES[3], QUEUES[0]]
    assert seen == [("G", "c2", QUEUES, ["c1", "c2"])]


@pytest.mark.parametrize(
    ("result", "match"),
    [
        (RuntimeError("boom"), "raised RuntimeError"),
        (None, "returned NoneType"),
        ("b:0", "returned str"),
        ({QUEUES[0]: 1}, "returned dict"),
        ([("t", "b", 0)], "returned a tuple"),
        ([MessageQueue("other", "b", 0)], "not a queue of t"),
        ([MessageQueue("t", "b", 9)], "not a queue of t"),
    ],
)
def test_a_bad_answer_is_an_allocation_failure(result: object, match: str) -> None:
    with pytest.raises(AllocationFailed, match=match):
        allocate_checked(_user(result), "G", "c", QUEUES, ["c"])


def test_by_config_leaves_out_queues_the_topic_lacks() -> None:
    config = ByConfig([QUEUES[2], MessageQueue("t", "gone", 0), QUEUES[0]])
    assert allocate_checked(config, "G", "c", QUEUES, ["c"]) == [QUEUES[2], QUEUES[0]]


@pytest.mark.parametrize(
    ("strategy", "match"),
    [("AVG", "must be a Strategy or a callable"), (42, "not int"),
     (Strategy, "not EnumType")],
)  # fmt: skip
def test_the_option_is_checked_before_any_io(strategy: object, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        as_allocator(strategy)
    with pytest.raises(ConfigError, match="strategy must be"):
        PushOptions(strategy=strategy)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="strategy must be"):
        PullOptions(strategy=strategy)  # type: ignore[arg-type]
    PullOptions(strategy=_user([]))  # a callable is taken
    PushOptions(strategy=_user([]))


def test_parameter_checks() -> None:
    with pytest.raises(ConfigError, match="consume_idcs"):
        ByMachineRoom("idc1")  # (a str would be its letters)
    with pytest.raises(ConfigError, match="MessageQueue values"):
        ByConfig([("t", "b", 0)])  # type: ignore[list-item]
    with pytest.raises(ConfigError, match="inner"):
        MachineRoomNearby(inner="AVG", broker_room=str, consumer_room=str)  # type: ignore[arg-type]
