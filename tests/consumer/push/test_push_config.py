"""PushConsumer settings checked before any network I/O (PushOptions when it is built, the
constructor's own arguments when the consumer is), and its flow-control arithmetic."""

from __future__ import annotations

import inspect
import math
from typing import Any

import attrs
import pytest

from rocketmq_actors.cluster.options import ClientOptions
from rocketmq_actors.consumer.core.process_queue import ProcessQueue
from rocketmq_actors.consumer.core.queues import QueueActor
from rocketmq_actors.consumer.pull import MessageSelector, Subscription
from rocketmq_actors.consumer.push import ConsumeFrom, MessageModel, PushConsumer, PushOptions
from rocketmq_actors.errors import ConfigError
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.records import MessageExt

from ..core.test_process_queue import _msg


async def _noop(message: MessageExt) -> None:
    return None


def _consumer(**options: Any) -> PushConsumer:
    return PushConsumer(group="G", subscriptions={"t": "*"}, handler=_noop, namesrv="127.0.0.1:9",
                        options=PushOptions(**options))  # fmt: skip


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"concurrency": 0}, "concurrency must be >= 1, not 0"),
        ({"pull_batch_size": 2.5}, "pull_batch_size must be an integer"),
        ({"consume_timeout": 0}, "consume_timeout"),
        ({"local_retry_delay": math.nan}, "local_retry_delay"),
        ({"retry_delay_level": 19}, "retry_delay_level must be in -1..18"),
        ({"max_reconsume_times": -1}, "max_reconsume_times must be >= 0"),
        ({"max_cached_bytes_per_topic": 0}, "max_cached_bytes_per_topic must be >= 1"),
        ({"model": "CLUSTERING"}, "model must be a MessageModel"),
        ({"consume_from": "FIRST_OFFSET"}, "consume_from must be a ConsumeFrom"),
        ({"strategy": "AVG"}, "strategy must be a Strategy or a callable"),
        ({"orderly": 1}, "orderly must be a bool"),
    ],
)
def test_bad_options_fail_when_built(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        PushOptions(**options)
    with pytest.raises(ConfigError, match=message):
        PushOptions().evolve(**options)


def test_options_are_a_frozen_value() -> None:
    options = PushOptions(orderly=True, consume_from=ConsumeFrom.FIRST_OFFSET)
    assert options == PushOptions(consume_from=ConsumeFrom.FIRST_OFFSET, orderly=True)
    assert hash(options) == hash(PushOptions(orderly=True, consume_from=ConsumeFrom.FIRST_OFFSET))
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        options.orderly = False  # type: ignore[misc]
    assert options.evolve(model=MessageModel.BROADCASTING).orderly


def test_every_option_is_in_the_docstring() -> None:
    doc = PushOptions.__doc__ or ""
    assert [f for f in attrs.fields_dict(PushOptions) if f"``{f}``" not in doc] == []


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"batch_handler": _noop}, "not both"),
        ({"options": PushOptions(consume_batch_size=4)}, "needs a batch_handler"),
        ({"handler": None, "sync_handler": True}, "sync_handler=True needs a handler"),
        ({"options": {"concurrency": 4}}, "options must be a PushOptions"),
        ({"client": {"namespace": "ns"}}, "client must be a ClientOptions"),
        ({"on_rebalance": 1}, "on_rebalance must be callable"),
        ({"value_deserializer": "json"}, "value_deserializer must be a callable"),
        ({"group": "bad group!"}, "group 'bad group!' must be"),
        ({"subscriptions": {}}, "subscriptions must map at least one topic"),
    ],
)
def test_the_constructors_own_arguments_are_checked_with_the_options(
    kwargs: dict[str, Any], message: str
) -> None:
    arguments: dict[str, Any] = {"group": "G", "subscriptions": {"t": "*"}, "handler": _noop,
                                 "namesrv": "127.0.0.1:9", **kwargs}  # fmt: skip
    with pytest.raises(ConfigError, match=message):
        PushConsumer(**arguments)


def test_the_constructor_takes_at_most_15_parameters() -> None:
    assert len(inspect.signature(PushConsumer).parameters) <= 15


def test_iterating_a_consumer_with_a_handler_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="has a handler"):
        aiter(_consumer())


def test_max_reconsume_defaults_follow_java() -> None:
    assert _consumer()._group.max_reconsume_times == 16
    assert _consumer(orderly=True)._group.max_reconsume_times == 2**31 - 1
    assert _consumer(max_reconsume_times=3)._group.max_reconsume_times == 3


def _own(consumer: PushConsumer, topic: str, count: int) -> None:
    """As if the rebalancer had started ``count`` queues of ``topic`` (registered, as the
    queue table registers its actors)."""
    registry = consumer._group.queues.registry
    for queue in list(registry):
        registry.unregister(queue)
    for i in range(count):
        queue = MessageQueue(topic, "b", i)
        registry.register(queue, QueueActor(consumer._group, queue, 0, locked=False))


async def test_topic_limits_are_shared_by_the_topic_queues() -> None:
    consumer = _consumer(max_cached_messages=1000, max_cached_messages_per_topic=100,
                         max_cached_bytes_per_topic=4000)  # fmt: skip
    pq = ProcessQueue(MessageQueue("t", "b", 0), 0)
    _own(consumer, "t", 4)  # four owned queues: 25 messages / 1000 bytes each
    pq.put([_msg(o, size=10) for o in range(24)])
    assert not consumer._group.over_limits(pq)
    pq.put([_msg(24, size=10)])
    assert consumer._group.over_limits(pq)  # 25 messages
    _own(consumer, "t", 2)  # fewer queues: a bigger share each
    assert not consumer._group.over_limits(pq)
    pq.put([_msg(25, size=800)])
    assert not consumer._group.over_limits(pq)  # 26 messages, 1050 bytes: under 50 and 2000
    pq.put([_msg(26, size=1000)])
    assert consumer._group.over_limits(pq)  # 2050 bytes > 4000 / 2


def test_orderly_ignores_the_span_limit() -> None:
    consumer = _consumer(orderly=True, max_span=5)
    pq = ProcessQueue(MessageQueue("t", "b", 0), 0)
    pq.put([_msg(0), _msg(50)])
    assert not consumer._group.over_limits(pq)
    assert _consumer(max_span=5)._group.over_limits(pq)


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
            group="g",
            subscriptions={"T": "*"},
            client=ClientOptions(credentials=AclCredentials("ak", "sk")),
            instance=shared,
        )  # fmt: skip


def test_a_selector_of_the_wrong_type_is_a_config_error_naming_the_topic() -> None:
    with pytest.raises(ConfigError, match=r"subscriptions\['t'\]"):
        PushConsumer(namesrv="127.0.0.1:9", group="G", subscriptions={"t": 5}, handler=_noop)  # type: ignore[dict-item]


def test_the_namespace_comes_from_the_client_options() -> None:
    consumer = PushConsumer(group="G", subscriptions={"t": "*"}, namesrv="127.0.0.1:9",
                            client=ClientOptions(namespace="ns"))  # fmt: skip
    assert consumer.group == "ns%G"
    assert [s.topic for s in consumer.subscriptions()] == ["ns%t", "%RETRY%ns%G"]
    with pytest.raises(ConfigError, match="give the NameServer once"):
        PushConsumer(group="G", subscriptions={"t": "*"}, namesrv="127.0.0.1:9",
                     client=ClientOptions(namesrv="127.0.0.1:9"))  # fmt: skip
