"""PushConsumer settings checked before any network I/O, and its flow-control arithmetic."""

from __future__ import annotations

from typing import Any

import pytest

from rocketmq_actors.consumer.core.process_queue import ProcessQueue
from rocketmq_actors.consumer.core.queues import QueueActor
from rocketmq_actors.consumer.pull import MessageSelector, Subscription
from rocketmq_actors.consumer.push import PushConsumer
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.records import MessageExt

from ..core.test_process_queue import _msg


async def _noop(message: MessageExt) -> None:
    return None


def _consumer(**kwargs: Any) -> PushConsumer:
    kwargs.setdefault("handler", _noop)
    return PushConsumer(namesrv="127.0.0.1:9", group="G", subscriptions={"t": "*"}, **kwargs)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"batch_handler": _noop}, "not both"),
        ({"consume_batch_size": 4}, "needs a batch_handler"),
        ({"concurrency": 0}, "must be >= 1"),
        ({"consume_timeout": 0}, "consume_timeout"),
    ],
)
def test_bad_settings_are_refused_up_front(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _consumer(**kwargs)


def test_iterating_a_consumer_with_a_handler_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="has a handler"):
        aiter(_consumer())


def test_max_reconsume_defaults_follow_java() -> None:
    assert _consumer().max_reconsume_times == 16
    assert _consumer(orderly=True).max_reconsume_times == 2**31 - 1


def _own(consumer: PushConsumer, topic: str, count: int) -> None:
    """As if the rebalancer had started ``count`` queues of ``topic`` (registered, as the
    queue table registers its actors)."""
    registry = consumer.queues.registry
    for queue in list(registry):
        registry.unregister(queue)
    for i in range(count):
        queue = MessageQueue(topic, "b", i)
        registry.register(queue, QueueActor(consumer, queue, 0, locked=False))


async def test_topic_limits_are_shared_by_the_topic_queues() -> None:
    consumer = _consumer(max_cached_messages=1000, max_cached_messages_per_topic=100,
                         max_cached_bytes_per_topic=4000)  # fmt: skip
    pq = ProcessQueue(MessageQueue("t", "b", 0), 0)
    _own(consumer, "t", 4)  # four owned queues: 25 messages / 1000 bytes each
    pq.put([_msg(o, size=10) for o in range(24)])
    assert not consumer.over_limits(pq)
    pq.put([_msg(24, size=10)])
    assert consumer.over_limits(pq)  # 25 messages
    _own(consumer, "t", 2)  # fewer queues: a bigger share each
    assert not consumer.over_limits(pq)
    pq.put([_msg(25, size=800)])
    assert not consumer.over_limits(pq)  # 26 messages, 1050 bytes: under 50 and 2000
    pq.put([_msg(26, size=1000)])
    assert consumer.over_limits(pq)  # 2050 bytes > 4000 / 2


def test_orderly_ignores_the_span_limit() -> None:
    consumer = _consumer(orderly=True, max_span=5)
    pq = ProcessQueue(MessageQueue("t", "b", 0), 0)
    pq.put([_msg(0), _msg(50)])
    assert not consumer.over_limits(pq)
    assert _consumer(max_span=5).over_limits(pq)


def test_selectors_parse_into_subscriptions() -> None:
    sql = Subscription.of("T", MessageSelector.by_sql("a > 1"))
    assert (sql.expression_type, sql.expression, sql.tags) == ("SQL92", "a > 1", frozenset())
    tag = Subscription.of("T", "b || a")
    assert (tag.expression_type, tag.tags) == ("TAG", frozenset({"a", "b"}))
    assert Subscription.of("T", MessageSelector.by_tag("a || b")) == tag
    with pytest.raises(ValueError, match="SQL92"):
        MessageSelector.by_sql("  ")


def test_connection_options_belong_to_a_shared_instance() -> None:
    from rocketmq_actors.cluster.instance import ClientInstance
    from rocketmq_actors.protocol.acl import AclCredentials

    shared = ClientInstance("127.0.0.1:9876")
    with pytest.raises(ValueError, match="shared ClientInstance"):
        PushConsumer(
            instance=shared, group="g", subscriptions={"T": "*"},
            credentials=AclCredentials("ak", "sk"),
        )  # fmt: skip


def test_a_selector_of_the_wrong_type_is_a_config_error_naming_the_topic() -> None:
    from rocketmq_actors.errors import ConfigError

    with pytest.raises(ConfigError, match=r"subscriptions\['t'\]"):
        PushConsumer(namesrv="127.0.0.1:9", group="G", subscriptions={"t": 5}, handler=_noop)  # type: ignore[dict-item]
