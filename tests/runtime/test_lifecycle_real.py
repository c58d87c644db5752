"""Every client kind's lifecycle against the real broker: cancelled scopes, handlers that
raise cancellations or interrupts, start in one task and stop in another."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
import pytest

from rocketmq_actors.cluster.options import ClientOptions
from rocketmq_actors.consumer.pop import PopConsumer
from rocketmq_actors.consumer.pull import PullConsumer, PullOptions
from rocketmq_actors.consumer.push import ConsumeFrom, PushConsumer, PushOptions
from rocketmq_actors.producer import Message, Producer, create_topic
from rocketmq_actors.protocol.records import MessageExt
from rocketmq_actors.runtime.lifecycle import State
from rocketmq_actors.testing.cluster import LocalCluster
from tests.conftest import BACKEND

from .test_lifecycle import _chain_has_no_cycle

#: the trio stage (tests/conftest.py) runs no async fixture: pytest-asyncio's, off there
ASYNC_FIXTURE = pytest.mark.skipif(BACKEND != "asyncio", reason="an async fixture is "
                                   "pytest-asyncio's: asyncio only")  # fmt: skip

# once: the client's lifecycle, whatever the broker
pytestmark = [pytest.mark.integration, pytest.mark.once]

MESSAGES = 20


async def _produce(namesrv: str, topic: str, count: int = MESSAGES) -> None:
    async with Producer(namesrv=namesrv, group="G_lifecycle_feed") as producer:
        await create_topic(producer.instance, topic, queues=4)
        for i in range(count):
            await producer.send(Message(topic=topic, body=b"m%d" % i))


async def _committed_total(namesrv: str, group: str, topic: str) -> int:
    async with PullConsumer(namesrv=namesrv, group=group) as reader:
        total = 0
        for queue in await reader.queues(topic):
            total += await reader.committed(queue) or 0
        return total


class _Counter:
    def __init__(self, target: int) -> None:
        self.bodies: list[bytes] = []
        self.target = target
        self.done = anyio.Event()
        self._changed = anyio.Event()

    def add(self, message: MessageExt) -> None:
        self.bodies.append(message.body)
        self._changed.set()
        self._changed = anyio.Event()
        if len(self.bodies) >= self.target:
            self.done.set()

    async def handle(self, message: MessageExt) -> None:
        self.add(message)

    async def wait_for(self, body: bytes) -> None:
        while body not in self.bodies:
            await self._changed.wait()


KINDS = ["producer", "push handler", "push async for", "pull"]


def _client(kind: str, namesrv: str, topic: str, group: str, seen: _Counter) -> Callable[
    [], Awaitable[None]
]:  # fmt: skip
    """The body of the issue's reproducer for one client kind: run until cancelled."""

    async def run() -> None:
        if kind == "producer":
            async with Producer(namesrv=namesrv, group=group) as producer:
                await producer.send(Message(topic=topic, body=b"x"))
                seen.done.set()
                await anyio.sleep_forever()
        elif kind == "push handler":
            async with PushConsumer(
                group=group,
                subscriptions={topic: "*"},
                handler=seen.handle,
                namesrv=namesrv,
                options=PushOptions(consume_from=ConsumeFrom.FIRST_OFFSET),
            ):  # fmt: skip
                await anyio.sleep_forever()
        elif kind == "push async for":
            async with PushConsumer(
                group=group,
                subscriptions={topic: "*"},
                namesrv=namesrv,
                options=PushOptions(consume_from=ConsumeFrom.FIRST_OFFSET),
            ) as consumer:  # fmt: skip
                async for message in consumer:
                    seen.add(message)
        else:
            async with PullConsumer(
                group=group,
                topics=[topic],
                namesrv=namesrv,
                options=PullOptions(auto_offset_reset="earliest"),
            ) as pull:
                async for message in pull:
                    seen.add(message)

    return run


@pytest.mark.timeout(90)
@pytest.mark.parametrize("how", ["task group", "move_on_after"])
@pytest.mark.parametrize("kind", KINDS)
async def test_a_cancelled_scope_stops_each_client_kind_and_persists_offsets(
    kind: str, how: str, rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    """The lifecycle issue's reproducer: the enclosing task group (or a ``move_on_after``)
    is cancelled while a client runs. It must exit (before: the loop spun for ever at 100%
    CPU), re-raise the cancellation unchanged, and commit what was consumed."""
    consumer = kind != "producer"
    if consumer:
        await _produce(rocketmq_namesrv, unique_topic)
    seen = _Counter(MESSAGES if consumer else 1)
    run = _client(kind, rocketmq_namesrv, unique_topic, unique_group, seen)
    caught: list[BaseException] = []

    async def worker() -> None:
        try:
            await run()
        except BaseException as exc:
            caught.append(exc)
            raise

    with anyio.fail_after(10):
        if how == "task group":
            async with anyio.create_task_group() as tg:
                tg.start_soon(worker)
                await seen.done.wait()
                tg.cancel_scope.cancel()
        else:
            with anyio.CancelScope() as scope:

                async def cancel_when_done() -> None:
                    await seen.done.wait()
                    scope.cancel()

                async with anyio.create_task_group() as tg:
                    tg.start_soon(cancel_when_done)
                    await worker()
    assert len(caught) == 1
    assert isinstance(caught[0], anyio.get_cancelled_exc_class())
    assert _chain_has_no_cycle(caught[0])
    if consumer:
        assert len(set(seen.bodies)) == MESSAGES
        # offsets persisted on the way out: a new member would start after all of them
        total = await _committed_total(rocketmq_namesrv, unique_group, unique_topic)
        assert total == MESSAGES


@pytest.mark.timeout(90)
async def test_a_stray_cancelled_error_from_a_handler_is_a_failure_not_a_stop(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    """Before: the consumer's ``async with`` returned as if asked to stop."""
    await _produce(rocketmq_namesrv, unique_topic, 4)
    attempts: dict[bytes, int] = {}
    seen = _Counter(4)  # every message once consumed (m2 on its second attempt)

    async def handle(message: MessageExt) -> None:
        attempts[message.body] = attempts.get(message.body, 0) + 1
        if message.body == b"m2" and attempts[message.body] == 1:
            future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            future.cancel()
            await future  # a CancelledError nobody meant for the consumer
        seen.add(message)

    body_finished = False
    async with PushConsumer(
        group=unique_group,
        subscriptions={unique_topic: "*"},
        handler=handle,
        namesrv=rocketmq_namesrv,
        options=PushOptions(consume_from=ConsumeFrom.FIRST_OFFSET, retry_delay_level=1),
    ) as consumer:  # fmt: skip
        with anyio.fail_after(40):
            await seen.done.wait()  # the cancelled one came back through %RETRY%
        assert consumer.running and consumer.failed == 1
        body_finished = True
    assert body_finished
    assert attempts[b"m2"] == 2 and sorted(set(seen.bodies)) == [b"m0", b"m1", b"m2", b"m3"]


@pytest.mark.timeout(90)
@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, SystemExit])
async def test_keyboard_interrupt_or_system_exit_in_a_handler_stops_and_is_reraised(
    interrupt: type[BaseException], rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    await _produce(rocketmq_namesrv, unique_topic, 8)
    seen = _Counter(8)
    handled: list[bytes] = []

    async def handle(message: MessageExt) -> None:
        if message.body == b"m5":
            raise interrupt()
        handled.append(message.body)

    consumer = PushConsumer(
        group=unique_group,
        subscriptions={unique_topic: "*"},
        handler=handle,
        namesrv=rocketmq_namesrv,
        options=PushOptions(consume_from=ConsumeFrom.FIRST_OFFSET, concurrency=1),
    )  # fmt: skip
    with anyio.fail_after(30), pytest.raises(interrupt):
        async with consumer:
            await anyio.sleep_forever()  # interrupted by the consumer stopping
    assert consumer.state is State.STOPPED and isinstance(consumer.error, interrupt)
    # the interrupted message was not committed: the next member of the group gets it
    async with PushConsumer(
        group=unique_group,
        subscriptions={unique_topic: "*"},
        handler=seen.handle,
        namesrv=rocketmq_namesrv,
        options=PushOptions(consume_from=ConsumeFrom.FIRST_OFFSET),
    ):  # fmt: skip
        with anyio.fail_after(30):
            await seen.wait_for(b"m5")
    assert b"m5" not in handled


@pytest.fixture
async def started_producer(rocketmq_namesrv: str, unique_group: str) -> AsyncIterator[Producer]:
    """pytest-asyncio runs a fixture's setup and teardown in different tasks: the producer
    is started in one and stopped in the other."""
    producer = Producer(namesrv=rocketmq_namesrv, group=unique_group)
    await producer.start()
    yield producer
    await producer.stop()
    assert producer.state is State.STOPPED


@ASYNC_FIXTURE
async def test_a_fixture_yields_a_started_producer(
    started_producer: Producer, unique_topic: str
) -> None:
    result = await started_producer.send(Message(topic=unique_topic, body=b"from a fixture"))
    assert result.queue_offset >= 0


async def test_a_consumer_started_in_one_task_and_stopped_in_another(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    await _produce(rocketmq_namesrv, unique_topic, 4)
    seen = _Counter(4)
    consumer = PushConsumer(
        group=unique_group,
        subscriptions={unique_topic: "*"},
        handler=seen.handle,
        namesrv=rocketmq_namesrv,
        options=PushOptions(consume_from=ConsumeFrom.FIRST_OFFSET),
    )  # fmt: skip
    async with anyio.create_task_group() as tg:  # the starting task ends before the stop
        tg.start_soon(consumer.start)
    with anyio.fail_after(30):
        await seen.done.wait()
    async with anyio.create_task_group() as tg:
        tg.start_soon(consumer.stop)
    assert consumer.state is State.STOPPED
    assert await _committed_total(rocketmq_namesrv, unique_group, unique_topic) == 4


def _each_kind(namesrv: str, topic: str, group: str, kind: str) -> Any:
    handler = _Counter(1).handle
    if kind == "producer":
        return Producer(namesrv=namesrv, group=group)
    if kind == "push":
        return PushConsumer(namesrv=namesrv, group=group, subscriptions={topic: "*"},
                            handler=handler)  # fmt: skip
    if kind == "pull":
        return PullConsumer(namesrv=namesrv, group=group)
    return PopConsumer(namesrv=namesrv, group=group, subscriptions={topic: "*"}, handler=handler)


@pytest.fixture(params=["producer", "push", "pull", "pop"])
async def entered(
    request: pytest.FixtureRequest, rocketmq_namesrv: str, rocketmq_cluster: LocalCluster,
    unique_topic: str, unique_group: str,
) -> AsyncIterator[Any]:  # fmt: skip
    """A client entered with ``async with`` in the fixture's setup task and left in its
    teardown task (pytest-asyncio runs them apart): before, leaving failed with "Attempted to
    exit cancel scope in a different task"."""
    if request.param == "pop" and rocketmq_cluster.spec.is_4x:
        pytest.skip("POP needs a 5.x broker")
    async with Producer(namesrv=rocketmq_namesrv, group=f"{unique_group}_t") as producer:
        await create_topic(producer.instance, unique_topic, queues=1)
    setup_task = asyncio.current_task()
    async with _each_kind(rocketmq_namesrv, unique_topic, unique_group, request.param) as client:
        yield client
        assert asyncio.current_task() is not setup_task  # (left in another task)
    assert client.state is State.STOPPED and client.error is None


@ASYNC_FIXTURE
async def test_a_fixture_yields_from_inside_async_with_each_client(entered: Any) -> None:
    assert entered.running


async def test_a_client_left_running_when_its_run_ends_is_not_reported_as_failed(
    rocketmq_namesrv: str, unique_group: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The event loop ends (asyncio's, or trio's run: make test's trio stage) with a client
    started and never stopped: its host is cancelled with the loop, which is no failure of
    the client's (no ``on_error``, no ``client.failed``)."""
    errors: list[BaseException] = []

    async def main() -> None:
        producer = Producer(namesrv=rocketmq_namesrv, group=unique_group,
                            client=ClientOptions(on_error=errors.append))  # fmt: skip
        await producer.start()

    await anyio.to_thread.run_sync(lambda: anyio.run(main, backend=BACKEND))
    assert errors == []
    assert "client.failed" not in caplog.text
