"""A cluster that cannot be reached is one typed error at start, for every client kind."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import pytest

from rocketmq_actors.cluster.client import Client
from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.consumer.pull import PullConsumer
from rocketmq_actors.consumer.push import PushConsumer
from rocketmq_actors.errors import NameServerUnavailable, RocketMQError
from rocketmq_actors.producer import Producer
from rocketmq_actors.producer.transaction import LocalTransactionState, TransactionProducer
from rocketmq_actors.protocol.records import MessageExt
from rocketmq_actors.runtime.lifecycle import Lifecycle, State

UNREACHABLE = "127.0.0.1:1;127.0.0.1:2"  # refused at once, both


async def _handle(message: MessageExt) -> None:
    pass


async def _check(message: MessageExt) -> LocalTransactionState:
    return LocalTransactionState.COMMIT


CLIENTS: dict[str, Callable[[], Lifecycle | Client[Any]]] = {
    "instance": lambda: ClientInstance(UNREACHABLE),
    "producer": lambda: Producer(namesrv=UNREACHABLE, group="G"),
    "producer with topics": lambda: Producer(namesrv=UNREACHABLE, group="G", topics=["T"]),
    "transaction producer": lambda: TransactionProducer(
        namesrv=UNREACHABLE, group="G", checker=_check, topics=["T"]
    ),
    "push consumer": lambda: PushConsumer(
        namesrv=UNREACHABLE, group="G", subscriptions={"T": "*"}, handler=_handle
    ),
    "push consumer, async for": lambda: PushConsumer(
        namesrv=UNREACHABLE, group="G", subscriptions={"T": "*"}
    ),
    "pull consumer": lambda: PullConsumer(namesrv=UNREACHABLE, group="G"),
}


@pytest.mark.parametrize("make", CLIENTS.values(), ids=CLIENTS.keys())
@pytest.mark.parametrize("how", ["async with", "start()"])
async def test_no_nameserver_at_start_is_one_typed_error(
    make: Callable[[], Lifecycle | Client[Any]], how: str
) -> None:
    client = make()
    with anyio.fail_after(10):
        try:
            if how == "async with":
                async with client:
                    pytest.fail("the body ran")  # pragma: no cover
            else:
                await client.start()
        except RocketMQError as exc:  # the one `except` a service needs
            error: BaseException = exc
        else:  # pragma: no cover
            pytest.fail("no error")
    assert isinstance(error, NameServerUnavailable)
    assert not isinstance(error, BaseExceptionGroup)
    assert "127.0.0.1:1" in str(error) and "127.0.0.1:2" in str(error)
    assert error.__cause__ is not None  # why the last NameServer did not answer
    assert client.state is State.STOPPED
