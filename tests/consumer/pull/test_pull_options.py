"""PullConsumer's options and subscriptions checked before any network I/O: PullOptions refuses a
wrong value when it is built, the constructor and ``subscribe()`` refuse what cannot be
consumed, and topics, a pattern and an assignment exclude each other (aiokafka's rule)."""

from __future__ import annotations

import inspect
import math
import re
from typing import Any

import pytest

from rocketmq_actors.cluster.options import ClientOptions
from rocketmq_actors.consumer.core.subscriptions import matching_topics
from rocketmq_actors.consumer.pull import (
    MessageSelector,
    OffsetReset,
    PullConsumer,
    PullOptions,
    Subscription,
)
from rocketmq_actors.consumer.pull.subscription import Mode
from rocketmq_actors.errors import ClientStateError, ConfigError
from rocketmq_actors.protocol.bodies import MessageQueue

NAMESRV = "127.0.0.1:9"


def test_the_defaults_are_unchanged() -> None:
    options = PullOptions()
    assert (options.auto_commit, options.auto_commit_interval, options.auto_offset_reset) == (
        True, 5.0, OffsetReset.LATEST,
    )  # fmt: skip
    assert (options.pull_batch_size, options.max_buffered, options.pull_suspend,
            options.rebalance_interval) == (32, 1000, 5.0, 20.0)  # fmt: skip
    assert PullOptions(auto_offset_reset="earliest").auto_offset_reset is OffsetReset.EARLIEST


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"auto_offset_reset": "middle"},
         "auto_offset_reset must be 'earliest' or 'latest', not 'middle'"),
        ({"pull_batch_size": 0}, "pull_batch_size must be >= 1, not 0"),
        ({"max_buffered": "many"}, "max_buffered must be an integer, not str"),
        ({"pull_suspend": 0}, "pull_suspend must be a finite number of seconds > 0, not 0"),
        ({"auto_commit_interval": -1.0}, "auto_commit_interval must be a finite number"),
        ({"rebalance_interval": math.inf}, "rebalance_interval must be a finite number"),
        ({"strategy": "AVG"}, "strategy must be a Strategy or a callable"),
        ({"auto_commit": "yes"}, "auto_commit must be bool"),
    ],
)  # fmt: skip
def test_a_wrong_option_fails_when_the_options_are_built(
    changes: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        PullOptions(**changes)
    with pytest.raises(ConfigError, match=re.escape(message)):
        PullOptions().evolve(**changes)


def test_the_constructor_takes_at_most_15_parameters() -> None:
    assert len(inspect.signature(PullConsumer).parameters) <= 15


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"topics": "orders"}, "not a string"),
        ({"topics": ["bad topic"]}, "outside"),
        ({"topics": {"t": 42}}, "tag expression"),
        ({"topics": ["t"], "pattern": "t.*"}, "not both"),
        ({"pattern": "("}, "not a regular expression"),
        ({"listener": object()}, "listener goes with topics or a pattern"),
        ({"options": {"auto_commit": False}}, "options must be a PullOptions"),
        ({"client": {"namespace": "ns"}}, "client must be a ClientOptions"),
        ({"group": "bad group"}, "group"),
        ({"value_deserializer": b"json"}, "value_deserializer"),
    ],
)
def test_the_constructor_refuses_what_cannot_be_consumed(
    kwargs: dict[str, Any], message: str
) -> None:
    kwargs.setdefault("group", "G")
    with pytest.raises(ConfigError, match=message):
        PullConsumer(namesrv=NAMESRV, **kwargs)


def test_the_constructors_topics_are_the_subscription() -> None:
    names = PullConsumer(group="G", topics=["a", "b"], namesrv=NAMESRV)
    assert names.subscription() == {"a", "b"}
    assert names._group.subs.topics == {"a": Subscription("a"), "b": Subscription("b")}
    shop = ClientOptions(namespace="shop")
    by_expression = PullConsumer(group="G", topics={"a": "x || y", "b": MessageSelector.by_sql(
        "n > 1")}, namesrv=NAMESRV, client=shop)  # fmt: skip
    assert by_expression.subscription() == {"a", "b"}  # (the application's names)
    subs = by_expression._group.subs.topics
    assert subs["shop%a"].tags == {"x", "y"} and subs["shop%b"].expression_type == "SQL92"
    pattern = PullConsumer(group="G", pattern=r"orders\..*", namesrv=NAMESRV)
    assert pattern._group.subs.mode is Mode.PATTERN
    assert pattern.subscription() == frozenset()  # (matched when it starts)
    assert PullConsumer(group="G", namesrv=NAMESRV).subscription() == frozenset()


async def test_subscribe_before_start_replaces_and_is_exclusive_with_assign() -> None:
    consumer = PullConsumer(group="G", topics=["a"], namesrv=NAMESRV)
    await consumer.subscribe(["b", "c"])  # not incremental
    assert consumer.subscription() == {"b", "c"}
    with pytest.raises(ConfigError, match="topics or a pattern"):
        await consumer.subscribe()
    with pytest.raises(ConfigError, match="topics or a pattern"):
        await consumer.subscribe(["b"], pattern="b")
    with pytest.raises(ClientStateError, match=r"consumes topics: unsubscribe\(\)"):
        await consumer.subscribe(pattern="b.*")
    with pytest.raises(ClientStateError, match=r"consumes topics: unsubscribe\(\)"):
        await consumer.assign([MessageQueue("b", "broker-a", 0)])
    await consumer.unsubscribe()
    assert consumer.subscription() == frozenset()
    await consumer.assign([MessageQueue("b", "broker-a", 0), MessageQueue("d", "broker-a", 1)])
    assert consumer.subscription() == {"b", "d"}  # the assigned queues' topics
    with pytest.raises(ClientStateError, match="consumes queues assigned by hand"):
        await consumer.subscribe(["b"])
    await consumer.unsubscribe()
    await consumer.subscribe(pattern=re.compile("b.*"))
    assert consumer._group.subs.mode is Mode.PATTERN


def test_a_pattern_matches_topic_names_in_full_within_the_namespace() -> None:
    names = ["orders", "orders_eu", "my_orders", "%RETRY%orders_g", "%DLQ%orders_g", "TBW102",
             "RMQ_SYS_TRACE_TOPIC", "rmq_sys_orders", "shop%orders", "shop%orders_eu",
             "shop%stock", "other%orders"]  # fmt: skip
    pattern = re.compile("orders.*")
    assert matching_topics(names, pattern, None) == ["orders", "orders_eu"]
    assert matching_topics(names, pattern, "shop") == ["shop%orders", "shop%orders_eu"]
    assert matching_topics(names, re.compile(".*"), "shop") == [
        "shop%orders", "shop%orders_eu", "shop%stock",
    ]  # fmt: skip
