"""``PushOptions(client_rebalance=False)``: which consumers follow the broker's mode, and how a
broker's assignment is split between the queue actors (PULL) and the poppers (POP), with the
POP retry topic subscribed as Java's RebalanceImpl.updateMessageQueueAssignment does."""

from __future__ import annotations

from typing import Any

import pytest

from rocketmq_actors.consumer.core.rebalance import Strategy
from rocketmq_actors.consumer.push import MessageModel, PushConsumer, PushOptions, poplane
from rocketmq_actors.consumer.push.group import PushGroup
from rocketmq_actors.errors import ConfigError
from rocketmq_actors.protocol.assignment import Assignment
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.records import MessageExt


async def _noop(message: MessageExt) -> None:
    return None


def _group(on_rebalance: Any = None, **options: Any) -> PushGroup:
    consumer: PushConsumer[bytes] = PushConsumer(
        group="G", subscriptions={"t": "*"}, handler=_noop, namesrv="127.0.0.1:9",
        on_rebalance=on_rebalance, options=PushOptions(client_rebalance=False, **options),
    )  # fmt: skip
    return consumer._group


def _lane(group: PushGroup) -> poplane.PopLane:
    lane = group.pop_lane
    assert lane is not None
    return lane


@pytest.mark.parametrize(
    ("options", "follows"),
    [
        ({}, True),
        ({"strategy": Strategy.AVG_BY_CIRCLE}, True),
        ({"orderly": True}, False),  # Java: an orderly consumer allocates on the client
        ({"model": MessageModel.BROADCASTING}, False),  # and so does a broadcasting one
        ({"client_rebalance": True}, False),
    ],
)
def test_who_follows_the_broker(options: dict[str, Any], follows: bool) -> None:
    built = PushOptions(**{"client_rebalance": False, **options})
    assert built.broker_mode is follows
    consumer: PushConsumer[bytes] = PushConsumer(group="G", subscriptions={"t": "*"},
                                                 handler=_noop, namesrv="127.0.0.1:9",
                                                 options=built)  # fmt: skip
    assert (consumer._group.pop_lane is not None) is follows


def test_the_broker_runs_only_its_two_strategies() -> None:
    with pytest.raises(ConfigError, match=r"Strategy\.AVG or Strategy\.AVG_BY_CIRCLE"):
        PushOptions(client_rebalance=False, strategy=Strategy.CONSISTENT_HASH)
    with pytest.raises(ConfigError, match="pop_batch_size"):
        PushOptions(client_rebalance=False, pop_batch_size=33)  # the broker's POP limit
    PushOptions(orderly=True, client_rebalance=False, strategy=Strategy.CONSISTENT_HASH)


async def test_an_assignment_is_split_by_mode_and_the_pop_retry_topic_follows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    group = _group()
    lane = _lane(group)
    answers: list[list[Assignment]] = []
    asked: list[tuple[str, str, str]] = []

    async def queried(instance: object, g: str, topic: str, strategy: str, model: str) -> Any:
        asked.append((topic, strategy, model))
        return answers.pop(0)

    monkeypatch.setattr(poplane, "queried", queried)
    retry = poplane.pop_retry_topic("t", "G")
    assert retry == "%RETRY%G_t"
    pull = [MessageQueue("t", "a", 0), MessageQueue("t", "a", 1)]
    pop = [MessageQueue("t", "a", -1), MessageQueue("t", "b", -1)]

    version = group.sub_version
    answers.append([Assignment(q, "PULL") for q in pull])
    assert await lane.allocate("t") == pull
    assert asked == [("t", "AVG", "CLUSTERING")]
    assert lane.assigned["t"] == set()
    assert retry in {s.topic for s in group.subscriptions()}  # PULL only: its pop retry topic
    assert group.sub_version > version  # (the next heartbeat tells the brokers)

    answers.append([Assignment(q, "POP") for q in pop])
    assert await lane.allocate("t") == []
    assert lane.assigned["t"] == set(pop)
    assert retry not in {s.topic for s in group.subscriptions()}  # POP only: dropped

    answers.append([Assignment(pull[0], "PULL"), Assignment(pop[1], "POP")])  # (mid-switch)
    assert await lane.allocate("t") == [pull[0]]
    assert lane.assigned["t"] == {pop[1]}
    assert retry not in {s.topic for s in group.subscriptions()}  # left as it was

    answers.append([Assignment(MessageQueue("%RETRY%G", "a", 0), "PULL")])
    assert await lane.allocate("%RETRY%G") == [MessageQueue("%RETRY%G", "a", 0)]
    assert "%RETRY%G_%RETRY%G" not in {s.topic for s in group.subscriptions()}


async def test_on_rebalance_is_told_the_popped_queues_of_the_same_round(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    told: list[list[MessageQueue]] = []
    group = _group(on_rebalance=told.append)
    lane = _lane(group)
    popped = MessageQueue("t", "a", -1)

    async def nothing(wanted: set[MessageQueue]) -> None:
        pass

    async def pop(topics: object) -> None:
        lane.running.add(popped)  # (what starting its popper records)

    monkeypatch.setattr(group.ownership, "apply", nothing)
    monkeypatch.setattr(lane, "apply", pop)
    await group._apply(set())
    assert told == [[popped]]


async def test_an_unsubscribed_topic_loses_its_poppers_and_its_pop_retry_topic_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    group = _group()
    lane = _lane(group)
    retry = poplane.pop_retry_topic("t", "G")
    group.follow_subscription(retry, True, of="t")  # (as a round in PULL mode made it)
    popped = MessageQueue("t", "a", -1)
    lane.assigned["t"], lane.running = {popped}, {popped}
    ended: list[object] = []
    monkeypatch.setattr(lane.poppers, "terminate_child", ended.append)
    monkeypatch.setattr(group, "_check_running", lambda: None)

    async def changed() -> None:
        pass

    monkeypatch.setattr(group, "_subscriptions_changed", changed)
    await group.unsubscribe("t")
    topics = {s.topic for s in group.subscriptions()}
    assert "t" not in topics and retry not in topics
    assert ended == [popped] and not lane.running and "t" not in lane.assigned
