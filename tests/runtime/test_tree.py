"""The tree as data: rendering, its shape, and a round trip through JSON."""

from __future__ import annotations

import json
import random

import pytest

from rocketmq_actors.errors import ConfigError
from rocketmq_actors.runtime.backoff import Backoff, RestartPolicy
from rocketmq_actors.runtime.tree import Node

TREE = Node(
    "PushConsumer(g)", "push-consumer",
    children=(
        Node("mailbox", "mailbox", mailbox=2),
        Node("queues", "queue-supervisor", children=(
            Node("queue[t@b:0]", "queue", restarts=1, last_error="OSError()",
                 info={"cached": 3}),
            Node("queue[t@b:1]", "queue", state="restarting"),
        )),
    ),
)  # fmt: skip


def test_render_draws_every_node_with_its_details() -> None:
    assert TREE.render().splitlines() == [
        "PushConsumer(g)",
        "├─ mailbox mailbox=2",
        "└─ queues",
        "   ├─ queue[t@b:0] restarts=1 cached=3 last_error=OSError()",
        "   └─ queue[t@b:1] [restarting]",
    ]


def test_the_shape_keeps_one_node_per_kind() -> None:
    assert TREE.render(details=False).splitlines() == [
        "push-consumer",
        "├─ mailbox",
        "└─ queue-supervisor",
        "   └─ queue",
    ]


def test_a_tree_survives_json() -> None:
    again = Node.from_dict(json.loads(json.dumps(TREE.to_dict())))
    assert again == TREE
    assert [n.kind for n in again.walk()] == [n.kind for n in TREE.walk()]
    assert len(TREE.find("queue")) == 2


def test_backoff_grows_resets_and_can_be_constant() -> None:
    backoff = Backoff(0.1, 1.0, rng=random.Random(3))
    delays = [backoff.next() for _ in range(6)]
    nominal = [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    assert all(n / 2 <= d <= n for d, n in zip(delays, nominal, strict=True))
    backoff.reset()
    assert backoff.next() <= 0.1
    assert [Backoff.constant(0.5).next() for _ in range(3)] == [0.5, 0.5, 0.5]


@pytest.mark.parametrize(
    "kwargs", [{"max_restarts": -1}, {"period": 0}, {"backoff_max": float("nan")}]
)
def test_restart_policies_are_checked(kwargs: dict[str, float]) -> None:
    with pytest.raises(ConfigError):
        RestartPolicy(**kwargs)  # type: ignore[arg-type]
