"""Handlers are checked when the consumer is built; failures are logged at a bounded rate."""

from __future__ import annotations

import functools
import math
import threading
from typing import Any

import pytest

from rocketmq_actors.cluster.options import ClientOptions
from rocketmq_actors.consumer.core.handlers import as_async_handler
from rocketmq_actors.consumer.push import PushConsumer, PushOptions
from rocketmq_actors.errors import ConfigError, RocketMQError
from rocketmq_actors.protocol.records import MessageExt


async def good(message: MessageExt) -> None:
    pass


async def two_args(message: MessageExt, extra: int) -> None:
    pass


def plain(message: MessageExt) -> None:
    pass


class AsyncCallable:
    async def __call__(self, message: MessageExt) -> None:
        pass


def _consumer(**kwargs: Any) -> PushConsumer:
    return PushConsumer(namesrv="127.0.0.1:1", group="G", subscriptions={"T": "*"}, **kwargs)


@pytest.mark.parametrize(
    "handler",
    [good, AsyncCallable(), functools.partial(two_args, extra=1)],
    ids=["async def", "async __call__", "partial"],
)
def test_async_handlers_are_accepted(handler: object) -> None:
    assert _consumer(handler=handler)._group.dispatcher.handler is handler


@pytest.mark.parametrize(
    ("handler", "words"),
    [
        (plain, "plain function: make it 'async def', or pass sync_handler=True"),
        (lambda m: good(m), "plain function"),  # noqa: PLW0108 - a lambda is the case
        ("not callable", "must be an async function"),
        (two_args, "exactly one positional argument"),
        (AsyncCallable, "exactly one positional argument"),  # the class, not an instance
    ],
    ids=["def", "lambda", "str", "two arguments", "a class"],
)
def test_bad_handlers_are_refused_at_construction(handler: object, words: str) -> None:
    with pytest.raises(ConfigError, match=words) as info:
        _consumer(handler=handler)
    assert isinstance(info.value, RocketMQError)


def test_a_batch_handler_is_checked_the_same_way() -> None:
    with pytest.raises(ConfigError, match=r"batch_handler .* plain function"):
        _consumer(batch_handler=plain)


def test_sync_handler_needs_a_plain_function() -> None:
    with pytest.raises(ConfigError, match="is async"):
        _consumer(handler=good, sync_handler=True)
    with pytest.raises(ConfigError, match="needs a handler"):
        _consumer(sync_handler=True)


async def test_a_sync_handler_runs_in_a_worker_thread() -> None:
    threads: list[int] = []

    def record(message: object) -> None:
        threads.append(threading.get_ident())

    wrapped = as_async_handler(record, name="handler", sync=True)
    await wrapped(object())
    assert threads and threads[0] != threading.get_ident()


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("concurrency", 0),
        ("concurrency", 2.5),
        ("consume_timeout", math.nan),
        ("consume_timeout", math.inf),
        ("consume_timeout", -1),
        ("shutdown_timeout", math.nan),
        ("request_timeout", 0),
        ("persist_interval", math.inf),
        ("retry_delay_level", 19),
    ],
)
def test_bad_numbers_are_config_errors(option: str, value: object) -> None:
    kind: Any = ClientOptions if option in ("shutdown_timeout", "request_timeout") else PushOptions
    with pytest.raises(ConfigError, match=option):  # when the options are built
        kind(**{option: value})
