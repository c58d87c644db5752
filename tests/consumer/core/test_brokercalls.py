"""PullCounter: each pull goes to the node the previous answer suggested."""

from __future__ import annotations

from typing import Any

import pytest

from rocketmq_actors.consumer.core import brokercalls
from rocketmq_actors.consumer.core.brokercalls import PullCounter, PullResult, PullStatus
from rocketmq_actors.errors import RequestTimeout
from rocketmq_actors.protocol.bodies import MessageQueue

QUEUE = MessageQueue("t", "b", 0)


async def test_the_next_pull_goes_where_the_last_answer_said(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    nodes: list[int] = []
    answers = iter([1, 1, 0])  # the broker suggests the slave twice, then the master

    async def pull_once(*args: Any, broker_id: int = 0, **kwargs: Any) -> PullResult:
        nodes.append(broker_id)
        if len(nodes) == 3:
            raise RequestTimeout("x", 11, 1.0)  # a failed pull keeps the suggestion
        return PullResult(PullStatus.NO_NEW_MSG, 0, 0, 0, (), next(answers))

    class Owner:
        instance = group = None
        pull_batch_size, pull_suspend, request_timeout, sub_version = 32, 0.0, 1.0, 0
        max_body_size = 4 * 1024 * 1024

        def subscription(self, topic: str) -> None:
            return None

    monkeypatch.setattr(brokercalls, "pull_once", pull_once)
    counter = PullCounter(0.001)
    for _ in range(4):
        await counter.pull(Owner(), QUEUE, 0)  # type: ignore[arg-type]
    assert nodes == [0, 1, 1, 1]
    assert (counter.pulls, counter.errors, counter.node) == (3, 1, 0)  # told: the master
