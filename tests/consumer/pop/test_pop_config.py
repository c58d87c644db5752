"""A PopConsumer's options are checked when it is built: a ConfigError naming the option,
before any I/O."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from rocketmq_actors.cluster.options import ClientOptions
from rocketmq_actors.consumer.core.message import ReceivedMessage
from rocketmq_actors.consumer.core.options import ConsumeFrom
from rocketmq_actors.consumer.core.subscriptions import Subscription
from rocketmq_actors.consumer.pop import PopConsumer, PopOptions
from rocketmq_actors.consumer.pop import calls as pop_calls
from rocketmq_actors.consumer.pop.service import POP_RETRY_DELAYS
from rocketmq_actors.errors import ConfigError


async def handle(message: ReceivedMessage[bytes]) -> None:
    pass


async def handle_batch(messages: list[ReceivedMessage[bytes]]) -> None:
    pass


def build(options: PopOptions | None = None, **arguments: Any) -> PopConsumer[bytes]:
    base: dict[str, Any] = {"namesrv": "127.0.0.1:9876", "group": "g", "subscriptions": {"t": "*"},
                            "handler": handle}  # fmt: skip
    base.update(arguments)
    return PopConsumer(options=options or PopOptions(), **base)


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"invisible_time": 0.5}, "invisible_time"),
        ({"invisible_time": 13 * 3600}, "invisible_time"),
        ({"invisible_time": "60"}, "invisible_time"),
        ({"pop_batch_size": 33}, "pop_batch_size"),
        ({"pop_batch_size": 0}, "pop_batch_size"),
        ({"poll_time": -1}, "poll_time"),
        ({"poll_time": 0}, "poll_time"),  # the broker answers at once: a tight POP loop
        ({"poll_time": 0.5}, "poll_time"),
        ({"consume_batch_size": "x"}, "consume_batch_size"),
        ({"ack_batch_size": 0}, "ack_batch_size"),
        ({"ack_interval": 0}, "ack_interval"),
        ({"retry_delay": float("nan")}, "retry_delay"),
        ({"max_reconsume_times": -1}, "max_reconsume_times"),
        ({"consume_from": ConsumeFrom.TIMESTAMP}, "consume_from"),
        ({"orderly": "yes"}, "orderly"),
        ({"concurrency": True}, "concurrency"),
        ({"max_cached_messages": 0}, "max_cached_messages"),
        ({"suspend_delay": 0}, "suspend_delay"),
        ({"consume_timeout": float("inf")}, "consume_timeout"),
        ({"route_interval": -1}, "route_interval"),
        ({"orderly": True, "consume_batch_size": 4}, "orderly"),
    ],
)
def test_a_wrong_option_is_a_config_error_when_the_options_are_built(
    options: dict[str, Any], named: str
) -> None:
    with pytest.raises(ConfigError, match=named):
        PopOptions(**options)
    with pytest.raises(ConfigError, match=named):  # (evolve checks as the constructor does)
        PopOptions().evolve(**options)


@pytest.mark.parametrize(
    ("options", "arguments", "named"),
    [
        (PopOptions(), {"subscriptions": {"t": 5}}, r"subscriptions\['t'\]"),
        (PopOptions(), {"subscriptions": {}}, "subscriptions"),
        (PopOptions(), {"subscriptions": {"%RETRY%g": "*"}}, "subscriptions"),
        (PopOptions(), {"group": ""}, "group"),
        (PopOptions(), {"batch_handler": handle_batch}, "handler or batch_handler"),
        (PopOptions(), {"handler": None, "sync_handler": True}, "sync_handler"),
        (PopOptions(), {"value_deserializer": 5}, "value_deserializer"),
        ({"orderly": True}, {}, "options"),
        (PopOptions(), {"client": {"namespace": "ns"}}, "client"),
        (PopOptions(orderly=True), {"handler": None, "batch_handler": handle_batch}, "orderly"),
        (PopOptions(consume_batch_size=4), {}, "consume_batch_size"),
    ],
)
def test_a_wrong_argument_is_a_config_error_naming_it(
    options: PopOptions, arguments: dict[str, Any], named: str
) -> None:
    with pytest.raises(ConfigError, match=named):
        build(options, **arguments)


def test_the_nameserver_is_given_once() -> None:
    with pytest.raises(ConfigError, match="once"):
        build(client=ClientOptions(namesrv="127.0.0.1:9876"))


def test_defaults_follow_the_java_client() -> None:
    options = PopOptions()
    assert options.invisible_time == 60.0 and options.poll_time == 15.0  # popInvisibleTime
    assert options.pop_batch_size == 32
    assert build()._group.max_reconsume_times == 16
    assert build(PopOptions(orderly=True))._group.max_reconsume_times == 2**31 - 1
    # DefaultMQPushConsumerImpl.popDelayLevel
    assert POP_RETRY_DELAYS[:3] == (10, 30, 60) and POP_RETRY_DELAYS[-1] == 7200


def test_the_shared_settings_come_from_the_client_options() -> None:
    consumer = build(client=ClientOptions(namesrv="127.0.0.1:9876", namespace="shop",
                                          request_timeout=7.0), namesrv=None)  # fmt: skip
    assert consumer.group == "shop%g"
    assert consumer._group.request_timeout == 7.0


def test_iterating_a_consumer_with_a_handler_is_refused() -> None:
    with pytest.raises(ConfigError, match="handler"):
        aiter(build())


async def test_a_popper_answered_at_once_with_nothing_backs_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A broker that does not hold the POP (its clock ahead of ours by more than the poll
    time: PopMessageRequestHeader.isTimeoutTooMuch) answers NOT_FOUND at once: the popper
    backs off instead of asking again in a tight loop."""
    calls = 0

    async def not_found(*args: Any, **kwargs: Any) -> pop_calls.Popped:
        nonlocal calls
        calls += 1
        return pop_calls.Popped(pop_calls.PopStatus.NOT_FOUND)

    monkeypatch.setattr(pop_calls, "pop_once", not_found)
    consumer = build()
    with anyio.move_on_after(0.5):
        await consumer._group.popper.run("t", "a", task_status=anyio.TASK_STATUS_IGNORED)
    assert 1 <= calls <= 4  # back-off 0.2 s, 0.4 s, ...: never thousands


async def test_a_popper_asks_with_the_subscription_as_it_is_at_each_pop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A push consumer that follows the broker's mode may change a topic's expression while
    its popper runs (subscribe()): the next POP carries the new one."""
    expressions: list[str] = []
    consumer = build()
    second = anyio.Event()

    async def pop_once(*args: Any, subscription: Any, **kwargs: Any) -> pop_calls.Popped:
        expressions.append(subscription.expression)
        if len(expressions) == 1:
            consumer._group._subscriptions["t"] = Subscription.of("t", "paid")
        else:
            second.set()
        return pop_calls.Popped(pop_calls.PopStatus.NOT_FOUND)

    monkeypatch.setattr(pop_calls, "pop_once", pop_once)
    with anyio.fail_after(10):  # (the second POP comes after the popper's back-off)
        async with anyio.create_task_group() as tg:
            await tg.start(consumer._group.popper.run, "t", "a")
            await second.wait()
            tg.cancel_scope.cancel()
    assert expressions[:2] == ["*", "paid"]
