"""PopConsumer against the real broker (5.x; a 4.x broker refuses it): load sharing beyond the
number of queues, redelivery after the invisible time, nack and handler failures, orderly POP,
the actor tree."""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any

import anyio
import pytest
from anyio.abc import TaskStatus

from rocketmq_actors.cluster.options import ClientOptions
from rocketmq_actors.consumer.core.message import ReceivedMessage
from rocketmq_actors.consumer.core.options import ConsumeFrom
from rocketmq_actors.consumer.pop import PopConsumer, PopOptions
from rocketmq_actors.errors import UnsupportedByBroker
from rocketmq_actors.producer import Message, Producer, create_topic
from rocketmq_actors.testing.cluster import FRESH_BROKER_TIMEOUT, LocalCluster
from tests.slack import slack

from ..routes import dead_letters

pytestmark = pytest.mark.integration

Handle = Callable[[ReceivedMessage[bytes]], Awaitable[None]]

_CLIENT = ClientOptions()


@pytest.fixture
def needs_5x(rocketmq_cluster: LocalCluster) -> None:
    if rocketmq_cluster.spec.is_4x:
        pytest.skip("POP needs a 5.x broker (test_pop_is_refused_on_4x runs here)")


def _pop(
    namesrv: str, group: str, topic: str, handler: Handle, *, client: ClientOptions = _CLIENT,
    **options: Any,
) -> PopConsumer[bytes]:  # fmt: skip
    options.setdefault("consume_from", ConsumeFrom.FIRST_OFFSET)
    options.setdefault("poll_time", 5.0)
    # (a POP answer lost on the way - a client timeout on a loaded machine - comes back after
    # this, within the tests' deadlines)
    options.setdefault("invisible_time", 10.0)
    return PopConsumer(namesrv=namesrv, group=group, subscriptions={topic: "*"},
                       handler=handler, options=PopOptions(**options), client=client)  # fmt: skip


def _stat(consumer: PopConsumer[bytes], name: str) -> int:
    count: int = consumer.statistics()[name]
    return count


async def _send(producer: Producer, topic: str, bodies: list[str], key: str | None = None) -> None:
    for body in bodies:
        await producer.send(Message(topic=topic, body=body.encode()), sharding_key=key)


async def _until(condition: Callable[[], bool], timeout: float) -> None:
    """Wait (bounded) until ``condition`` holds, looking again whenever a handler ran."""
    with anyio.fail_after(timeout):
        while not condition():
            await CHANGED.wait()


class _Changed:
    """Set by the handlers: the condition a test waits for may hold now."""

    def __init__(self) -> None:
        self._event: anyio.Event | None = None

    def set(self) -> None:
        if self._event is not None:
            self._event.set()
        self._event = None

    async def wait(self) -> None:
        if self._event is None:  # (one per wait: each test has an event loop of its own)
            self._event = anyio.Event()
        with anyio.move_on_after(0.5):  # (also look again at conditions on a clock: acks)
            await self._event.wait()


CHANGED = _Changed()


@pytest.fixture(autouse=True)
def _fresh_changed() -> None:
    CHANGED._event = None  # (an event belongs to the event loop of the test that made it)


@pytest.mark.usefixtures("needs_5x")
async def test_eight_members_share_a_four_queue_topic(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    total = 240
    got: dict[int, list[bytes]] = defaultdict(list)

    def member(i: int) -> Handle:
        async def handle(message: ReceivedMessage[bytes]) -> None:
            await anyio.sleep(0.01)  # a handler that takes a little time
            got[i].append(message.body)
            CHANGED.set()

        return handle

    async with Producer(namesrv=rocketmq_namesrv, group=f"{unique_group}_p") as producer:
        await create_topic(producer.instance, unique_topic, queues=4, timeout=FRESH_BROKER_TIMEOUT)
        async with AsyncExitStack() as stack:
            members = [
                await stack.enter_async_context(
                    _pop(
                        rocketmq_namesrv,
                        unique_group,
                        unique_topic,
                        member(i),
                        pop_batch_size=2,
                        concurrency=1,
                        max_cached_messages=2,
                    )
                )
                for i in range(8)
            ]
            await _send(producer, unique_topic, [f"m-{i}" for i in range(total)])
            await _until(lambda: sum(map(len, got.values())) >= total, 90)
            await _until(lambda: sum(_stat(m, "acked") for m in members) >= total, 10)
    bodies = Counter(b for received in got.values() for b in received)
    assert set(bodies) == {f"m-{i}".encode() for i in range(total)}  # nothing lost
    assert max(bodies.values()) == 1  # none twice: every ack was taken
    assert all(got[i] for i in range(8)), {i: len(got[i]) for i in range(8)}  # all had some
    assert sum(_stat(m, "acked") for m in members) == total
    assert sum(_stat(m, "ack_refused") for m in members) == 0


@pytest.mark.usefixtures("needs_5x")
async def test_a_killed_members_unacked_messages_go_to_another_after_the_invisible_time(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    total = 20
    held: list[bytes] = []
    later: dict[bytes, int] = {}  # body -> reconsume count, at the second member
    back_at: dict[bytes, float] = {}
    held_at = 0.0

    async def hold(message: ReceivedMessage[bytes]) -> None:
        held.append(message.body)
        CHANGED.set()
        await anyio.sleep_forever()  # never done: killed with them in hand

    async def take(message: ReceivedMessage[bytes]) -> None:
        later[message.body] = message.reconsume_times
        back_at[message.body] = time.monotonic()
        CHANGED.set()

    async with Producer(namesrv=rocketmq_namesrv, group=f"{unique_group}_p") as producer:
        await create_topic(producer.instance, unique_topic, queues=4, timeout=FRESH_BROKER_TIMEOUT)
        first = _pop(rocketmq_namesrv, unique_group, unique_topic, hold, invisible_time=5,
                     concurrency=4, client=ClientOptions(shutdown_timeout=2))  # fmt: skip

        async def run_first(*, task_status: TaskStatus[None]) -> None:
            async with first:
                task_status.started()
                await anyio.sleep_forever()

        async with anyio.create_task_group() as tg:
            await tg.start(run_first)
            await _send(producer, unique_topic, [f"k-{i}" for i in range(total)])
            await _until(lambda: len(held) >= 4, 30)
            began = held_at = time.monotonic()
            tg.cancel_scope.cancel()  # what a SIGTERM'd daemon's runner does
        killed_at = time.monotonic()
        assert killed_at - began < 2 + slack(began)  # within its shutdown timeout
        assert not first.running
        assert _stat(first, "acked") == 0
        async with _pop(rocketmq_namesrv, unique_group, unique_topic, take) as second:
            try:
                await _until(lambda: len(later) >= total, 60)
            except TimeoutError:
                raise AssertionError(
                    (len(held), sorted(later.items()), first.statistics(), second.statistics())
                ) from None
    assert set(later) == {f"k-{i}".encode() for i in range(total)}  # nothing lost
    assert all(later[b] >= 1 for b in held)  # the held ones came back through the retry topic
    # hidden for the first member's invisible time (5 s) from its POP, which came before
    # its handlers held them
    first_back = min(back_at[b] for b in held)
    assert first_back - held_at > 4.0, first_back - held_at


@pytest.mark.usefixtures("needs_5x")
async def test_nack_and_handler_failures_are_delivered_again(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    seen: dict[bytes, list[int]] = defaultdict(list)  # body -> reconsume count per delivery

    async def handle(message: ReceivedMessage[bytes]) -> None:
        deliveries = seen[message.body]
        deliveries.append(message.reconsume_times)
        CHANGED.set()
        if message.body == b"nack" and len(deliveries) < 3:
            message.nack(delay=1)
        elif message.body == b"raise" and len(deliveries) < 2:
            raise RuntimeError("not yet")

    async with Producer(namesrv=rocketmq_namesrv, group=f"{unique_group}_p") as producer:
        await create_topic(producer.instance, unique_topic, queues=2, timeout=FRESH_BROKER_TIMEOUT)
        consumer = _pop(rocketmq_namesrv, unique_group, unique_topic, handle, retry_delay=1.0)
        async with consumer:
            await _send(producer, unique_topic, ["nack", "raise", "fine"])
            try:
                await _until(lambda: len(seen[b"nack"]) >= 3 and len(seen[b"raise"]) >= 2, 90)
            except TimeoutError:
                raise AssertionError((dict(seen), consumer.statistics())) from None
            await _until(lambda: _stat(consumer, "acked") >= 3, 10)
    assert seen[b"nack"] == [0, 1, 2]  # each nack one more reconsume
    assert seen[b"raise"] == [0, 1]
    assert seen[b"fine"] == [0]
    assert _stat(consumer, "retried") == 3 and _stat(consumer, "failed") == 3


@pytest.mark.usefixtures("needs_5x")
async def test_past_max_reconsume_times_and_on_nack_without_requeue_it_is_a_dead_letter(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    seen: dict[bytes, list[int]] = defaultdict(list)

    async def handle(message: ReceivedMessage[bytes]) -> None:
        seen[message.body].append(message.reconsume_times)
        CHANGED.set()
        if message.body == b"dead now":
            message.nack(requeue=False)
        else:
            raise RuntimeError("never")

    async with Producer(namesrv=rocketmq_namesrv, group=f"{unique_group}_p") as producer:
        await create_topic(producer.instance, unique_topic, queues=1, timeout=FRESH_BROKER_TIMEOUT)
        consumer = _pop(rocketmq_namesrv, unique_group, unique_topic, handle, retry_delay=1.0,
                        max_reconsume_times=1)  # fmt: skip
        async with consumer:
            await _send(producer, unique_topic, ["dead now", "never"])
            await _until(lambda: _stat(consumer, "dead") >= 2, 60)
            await _until(lambda: _stat(consumer, "acked") + _stat(consumer, "ack_refused") >= 2, 10)
    letters = await dead_letters(rocketmq_namesrv, unique_group, 2)
    assert sorted(m.body for m in letters) == [b"dead now", b"never"]
    assert seen[b"never"] == [0, 1]  # delivered max_reconsume_times + 1 times
    assert seen[b"dead now"] == [0]


@pytest.mark.usefixtures("needs_5x")
async def test_async_for_settles_each_message(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    async with Producer(namesrv=rocketmq_namesrv, group=f"{unique_group}_p") as producer:
        await create_topic(producer.instance, unique_topic, queues=2, timeout=FRESH_BROKER_TIMEOUT)
        await _send(producer, unique_topic, ["a", "later", "b"])
        received: list[tuple[bytes, int]] = []
        consumer: PopConsumer[bytes] = PopConsumer(
            namesrv=rocketmq_namesrv, group=unique_group, subscriptions={unique_topic: "*"},
            options=PopOptions(consume_from=ConsumeFrom.FIRST_OFFSET, poll_time=5.0,
                               invisible_time=10.0),
        )  # fmt: skip
        async with consumer:
            with anyio.fail_after(60):
                async for message in consumer:
                    received.append((message.body, message.reconsume_times))
                    if message.body == b"later" and message.reconsume_times == 0:
                        message.nack(delay=1)
                    if len(received) == 4:
                        break
            # the message the loop broke on is not consumed (delivered again later): the
            # two before it that were not nacked are, once the loop asked for the next
            await _until(lambda: _stat(consumer, "acked") >= 2, 10)
    assert sorted(received) == [(b"a", 0), (b"b", 0), (b"later", 0), (b"later", 1)]
    assert _stat(consumer, "acked") == _stat(consumer, "consumed") == 2


@pytest.mark.usefixtures("needs_5x")
async def test_orderly_pop_keeps_each_queues_order_through_a_failure(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    keys, per_key = ["a", "b", "c", "d"], 15
    log: dict[str, list[int]] = defaultdict(list)  # key -> seq, in the order consumed
    failed_once: set[str] = set()

    def member() -> Handle:
        async def handle(message: ReceivedMessage[bytes]) -> None:
            key, seq = message.body.decode().split(":")
            if seq == "5" and key not in failed_once:
                failed_once.add(key)
                raise RuntimeError("once")  # the queue waits, then this one comes again
            log[key].append(int(seq))
            CHANGED.set()

        return handle

    async with Producer(namesrv=rocketmq_namesrv, group=f"{unique_group}_p") as producer:
        await create_topic(producer.instance, unique_topic, queues=4, timeout=FRESH_BROKER_TIMEOUT)
        async with AsyncExitStack() as stack:
            for _ in range(2):
                await stack.enter_async_context(
                    _pop(
                        rocketmq_namesrv,
                        unique_group,
                        unique_topic,
                        member(),
                        orderly=True,
                        suspend_delay=1.0,
                        pop_batch_size=4,
                    )
                )
            for seq in range(per_key):
                for key in keys:
                    await _send(producer, unique_topic, [f"{key}:{seq}"], key=key)
            await _until(lambda: all(len(log[k]) >= per_key for k in keys), 90)
    for key in keys:
        assert log[key] == list(range(per_key)), (key, log[key])  # in order, none twice
    assert failed_once == set(keys)


@pytest.mark.parametrize("orderly", [False, True])
async def test_pop_is_refused_on_4x(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str, rocketmq_cluster: LocalCluster,
    orderly: bool,
) -> None:  # fmt: skip
    if not rocketmq_cluster.spec.is_4x:
        pytest.skip("a 4.x broker is needed (run with --rocketmq-version 4.9.7)")

    async def handle(message: ReceivedMessage[bytes]) -> None:
        pass

    async with Producer(namesrv=rocketmq_namesrv, group=f"{unique_group}_p") as producer:
        await create_topic(producer.instance, unique_topic, queues=1, timeout=FRESH_BROKER_TIMEOUT)
    with pytest.raises(UnsupportedByBroker, match=r"POP consumption needs a RocketMQ 5\.x") as info:
        async with _pop(rocketmq_namesrv, unique_group, unique_topic, handle, orderly=orderly):
            pass
    assert info.value.broker_version.startswith("V4_")


@pytest.mark.usefixtures("needs_5x")
async def test_the_pop_consumer_tree_is_the_one_the_architecture_document_draws(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    from tests.test_docs import architecture_shapes

    async def handle(message: ReceivedMessage[bytes]) -> None:
        pass

    async with Producer(namesrv=rocketmq_namesrv, group=f"{unique_group}_p") as producer:
        await create_topic(producer.instance, unique_topic, queues=2, timeout=FRESH_BROKER_TIMEOUT)
    async with _pop(rocketmq_namesrv, unique_group, unique_topic, handle) as consumer:
        assert consumer.tree().render(details=False) == architecture_shapes()["pop-consumer"]
        assert consumer.statistics()["brokers"]


async def test_a_pop_consumer_pops_from_every_broker_of_the_topic(
    rocketmq_two_masters: LocalCluster, unique_topic: str, unique_group: str
) -> None:
    cluster = rocketmq_two_masters
    if cluster.spec.is_4x:
        pytest.skip("POP needs a 5.x broker")
    namesrv = cluster.namesrv_addr
    got: dict[str, list[bytes]] = defaultdict(list)  # broker -> bodies

    async def handle(message: ReceivedMessage[bytes]) -> None:
        got[message.broker_name].append(message.body)
        CHANGED.set()

    async with Producer(namesrv=namesrv, group=f"{unique_group}_p") as producer:
        await create_topic(producer.instance, unique_topic, queues=2, timeout=FRESH_BROKER_TIMEOUT)
        async with _pop(namesrv, unique_group, unique_topic, handle) as consumer:
            assert sorted(consumer.statistics()["brokers"]) == [
                f"{unique_topic}@broker-a", f"{unique_topic}@broker-b"
            ]  # fmt: skip
            await _send(producer, unique_topic, [f"m-{i}" for i in range(40)])
            await _until(lambda: sum(map(len, got.values())) >= 40, 60)
            await _until(lambda: _stat(consumer, "acked") >= 40, 10)
    assert sorted(got) == ["broker-a", "broker-b"]  # the sends went round both
    assert sorted(b for bodies in got.values() for b in bodies) == sorted(
        f"m-{i}".encode() for i in range(40)
    )
