"""The rebalancer actor without a cluster: its ``refresh`` runs before each round, and an
interval under a second (the back-off for topics without a route starts at one) works."""

from __future__ import annotations

from typing import Any

import anyio

from rocketmq_actors.consumer.core.rebalance import Strategy
from rocketmq_actors.consumer.core.rebalancer import Rebalancer
from rocketmq_actors.protocol.bodies import MessageQueue


async def test_refresh_runs_before_each_round_of_a_short_interval() -> None:
    calls: list[str] = []
    rounds = anyio.Event()

    async def refresh() -> None:
        calls.append("refresh")

    async def apply(wanted: set[MessageQueue]) -> None:  # pragma: no cover (no topics)
        calls.append("apply")

    def topics() -> list[str]:
        calls.append("round")
        if calls.count("round") >= 3:
            rounds.set()
        return []  # nothing subscribed: a round ends here, before any I/O

    instance: Any = object()
    rebalancer = Rebalancer(
        instance, "G", strategy=Strategy.AVG, broadcasting=False, interval=0.01,
        topics=topics, owned=list, apply=apply, refresh=refresh,
    )  # fmt: skip
    async with anyio.create_task_group() as tg:
        await tg.start(rebalancer.run)
        with anyio.fail_after(10):
            await rounds.wait()
        rebalancer.stop()
    assert calls[:6] == ["refresh", "round"] * 3


async def test_a_topic_unsubscribed_during_a_round_is_not_allocated() -> None:
    subscribed = ["a", "b"]
    asked: list[str] = []
    applied: list[set[MessageQueue]] = []

    async def allocate(topic: str) -> list[MessageQueue]:
        asked.append(topic)
        subscribed.remove("b")  # (unsubscribed while "a" was being asked for)
        return [MessageQueue(topic, "x", 0)]

    async def apply(wanted: set[MessageQueue]) -> None:
        applied.append(wanted)

    instance: Any = object()
    rebalancer = Rebalancer(
        instance, "G", strategy=Strategy.AVG, broadcasting=False, interval=60,
        topics=lambda: list(subscribed), owned=list, apply=apply, allocate=allocate,
    )  # fmt: skip
    await rebalancer.rebalance()
    assert asked == ["a"] and applied == [{MessageQueue("a", "x", 0)}]
