"""A PopConsumer's options are checked when it is built: a ConfigError naming the option,
before any I/O."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from rocketmq_actors.consumer.core.message import ReceivedMessage
from rocketmq_actors.consumer.core.options import ConsumeFrom
from rocketmq_actors.consumer.pop import PopConsumer
from rocketmq_actors.consumer.pop import calls as pop_calls
from rocketmq_actors.consumer.pop.service import POP_RETRY_DELAYS
from rocketmq_actors.errors import ConfigError


async def handle(message: ReceivedMessage[bytes]) -> None:
    pass


async def handle_batch(messages: list[ReceivedMessage[bytes]]) -> None:
    pass


def build(**options: Any) -> PopConsumer:
    base: dict[str, Any] = {"namesrv": "127.0.0.1:9876", "group": "g", "subscriptions": {"t": "*"},
                            "handler": handle}  # fmt: skip
    base.update(options)
    return PopConsumer(**base)


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
        ({"subscriptions": {"t": 5}}, r"subscriptions\['t'\]"),
        ({"ack_batch_size": 0}, "ack_batch_size"),
        ({"ack_interval": 0}, "ack_interval"),
        ({"retry_delay": float("nan")}, "retry_delay"),
        ({"max_reconsume_times": -1}, "max_reconsume_times"),
        ({"consume_from": ConsumeFrom.TIMESTAMP}, "consume_from"),
        ({"orderly": "yes"}, "orderly"),
        ({"subscriptions": {}}, "subscriptions"),
        ({"subscriptions": {"%RETRY%g": "*"}}, "subscriptions"),
        ({"handler": None, "batch_handler": handle_batch, "orderly": True}, "orderly"),
        ({"consume_batch_size": 4}, "consume_batch_size"),
        ({"group": ""}, "group"),
    ],
)
def test_a_wrong_option_is_a_config_error_naming_it(options: dict[str, Any], named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        build(**options)


def test_defaults_follow_the_java_client() -> None:
    consumer = build()
    assert consumer.invisible_time == 60.0 and consumer.poll_time == 15.0  # popInvisibleTime
    assert consumer.pop_batch_size == 32 and consumer.max_reconsume_times == 16
    assert build(orderly=True).max_reconsume_times == 2**31 - 1
    # DefaultMQPushConsumerImpl.popDelayLevel
    assert POP_RETRY_DELAYS[:3] == (10, 30, 60) and POP_RETRY_DELAYS[-1] == 7200


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
        await consumer._pop_loop("t", "a", task_status=anyio.TASK_STATUS_IGNORED)
    assert 1 <= calls <= 4  # back-off 0.2 s, 0.4 s, ...: never thousands
