"""Every long-lived task is a supervised child: a fault injected into any of them is followed by
a restart (after a back-off), the client goes on working, and a child that keeps failing
escalates to its owner, which stops with a typed error that ``async with`` raises."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable
from typing import Any

import anyio
import attrs
import pytest

from rocketmq_actors.cluster.client import Client
from rocketmq_actors.consumer.pull import PullConsumer, PullOptions
from rocketmq_actors.consumer.push import ConsumeFrom, PushConsumer, PushOptions
from rocketmq_actors.errors import ClientClosed, SupervisorGaveUp
from rocketmq_actors.producer import Message, Producer, create_topic
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.records import MessageExt
from rocketmq_actors.runtime.lifecycle import Lifecycle
from rocketmq_actors.runtime.supervisor import DynamicSupervisor, RestartPolicy
from rocketmq_actors.runtime.tree import Node

# once: the client's supervision tree, whatever the broker
pytestmark = [pytest.mark.integration, pytest.mark.once]

#: two restarts within 30 s, then escalate; short back-offs (the test hook: a client's
#: supervisors take any policy)
FAST = RestartPolicy(max_restarts=2, period=30.0, backoff_initial=0.05, backoff_max=0.1,
                     escalate=True)  # fmt: skip


@attrs.define
class Subject:
    """A started client, the supervisor of the child under test, its key, and a probe that
    shows the client still does its work."""

    client: Lifecycle | Client[Any]
    supervisor: DynamicSupervisor
    key: Hashable
    works: Callable[[], Awaitable[None]]
    escalates_as: type[Exception] = SupervisorGaveUp


class Inbox:
    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self._changed = anyio.Event()

    async def handle(self, message: MessageExt) -> None:
        self.bodies.append(message.body)
        self._changed.set()
        self._changed = anyio.Event()

    async def wait_for(self, body: bytes) -> None:
        with anyio.fail_after(30):
            while body not in self.bodies:
                await self._changed.wait()


async def _feed(namesrv: str, topic: str, body: bytes) -> None:
    async with Producer(namesrv=namesrv, group="G_supervision_feed") as producer:
        await producer.send(Message(topic=topic, body=body))


def _subject(kind: str, child: str, namesrv: str, topic: str, group: str) -> Subject:
    counter = iter(range(1_000_000))

    def body() -> bytes:
        return b"probe-%d" % next(counter)

    if kind in ("producer", "instance"):
        producer = Producer(namesrv=namesrv, group=group)

        async def send() -> None:
            await producer.send(Message(topic=topic, body=body()))
            await (await producer.submit(Message(topic=topic, body=body())))

        if kind == "instance":  # the instance's own children: the member sees it stop
            return Subject(producer, producer.instance._supervisor, child, send, ClientClosed)
        return Subject(producer, producer._group._supervisor, child, send)
    if kind.startswith("push"):
        inbox = Inbox()
        push = PushConsumer(
            group=group,
            subscriptions={topic: "*"},
            handler=inbox.handle,
            namesrv=namesrv,
            options=PushOptions(consume_from=ConsumeFrom.FIRST_OFFSET,
                                orderly=kind == "push orderly"),
        )  # fmt: skip

        async def consume() -> None:
            probe = body()
            await _feed(namesrv, topic, probe)
            await inbox.wait_for(probe)

        if child == "queue":
            return Subject(push, push._group.queues.supervisor,
                           MessageQueue(topic, "broker-a", 0), consume)  # fmt: skip
        return Subject(push, push._group._supervisor, child, consume)
    pull = PullConsumer(group=group, topics=[topic], namesrv=namesrv,
                        options=PullOptions(auto_offset_reset="earliest"))  # fmt: skip

    async def fetch() -> None:
        probe = body()
        await _feed(namesrv, topic, probe)
        with anyio.fail_after(30):
            while True:
                batches = await pull.getmany(timeout=5.0)
                if any(m.body == probe for ms in batches.values() for m in ms):
                    return

    if child == "fetcher":
        return Subject(pull, pull._group.fetchers.supervisor, MessageQueue(topic, "broker-a", 0),
                       fetch)  # fmt: skip
    return Subject(pull, pull._group._supervisor, child, fetch)


CASES = [
    ("instance", "routes"),
    ("instance", "heartbeat"),
    ("producer", "mailbox"),
    ("producer", "senders"),
    ("push", "mailbox"),
    ("push", "consume"),
    ("push", "rebalancer"),
    ("push", "offsets"),
    ("push", "queue"),
    ("push orderly", "locks"),
    ("push orderly", "queue"),
    ("pull", "mailbox"),
    ("pull", "rebalancer"),
    ("pull", "offsets"),
    ("pull", "fetcher"),
]


def _node(tree: Node, key: Hashable) -> Node:
    """The node of a supervised child, whatever its kind."""
    name = str(key)
    if isinstance(key, MessageQueue):
        name = f"[{key.topic}@{key.broker_name}:{key.queue_id}]"
    found = [n for n in tree.walk() if n.name == name or n.name.endswith(name)]
    assert found, f"{name} not in\n{tree.render()}"
    return found[0]


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("kind", "child"), CASES, ids=[f"{k}-{c}" for k, c in CASES])
async def test_a_fault_in_any_child_restarts_it_then_escalates_to_a_typed_error(
    kind: str, child: str, rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    async with Producer(namesrv=rocketmq_namesrv, group="G_supervision_admin") as admin:
        await create_topic(admin.instance, unique_topic, queues=1)
    subject = _subject(kind, child, rocketmq_namesrv, unique_topic, unique_group)
    client, supervisor, key = subject.client, subject.supervisor, subject.key
    supervisor.policy = FAST
    with pytest.raises(subject.escalates_as) as info:
        async with client:
            await subject.works()
            with anyio.fail_after(30):
                await supervisor.wait_running(key)
                assert supervisor.exit_child(key, RuntimeError("injected 1"))
                await supervisor.wait_running(key, restarts=1)
            node = _node(client.tree(), key)
            assert node.restarts == 1 and node.state == "running"
            assert node.last_error == "RuntimeError('injected 1')"
            backoff = supervisor.statistics().backoffs[-1]
            assert FAST.backoff_initial / 2 <= backoff <= FAST.backoff_initial
            await subject.works()  # restarted, and the client does its work again
            for n in (2, 3):  # past the intensity: the owner stops with a typed error
                with anyio.fail_after(30):
                    await supervisor.wait_running(key, restarts=n - 1)
                supervisor.exit_child(key, RuntimeError(f"injected {n}"))
            await anyio.sleep_forever()  # interrupted: the client stopped
    error: Any = info.value
    gave_up = error if isinstance(error, SupervisorGaveUp) else error.__cause__
    assert isinstance(gave_up, SupervisorGaveUp), repr(error)
    assert gave_up.key == key and str(gave_up.__cause__) == "injected 3"
    assert client.error is error


async def test_the_architecture_diagrams_are_the_live_trees(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    """docs/architecture.md draws each client's tree; here each is started and compared."""
    from tests.test_docs import architecture_shapes

    async def handle(message: MessageExt) -> None:
        pass

    shapes = architecture_shapes()
    async with Producer(namesrv=rocketmq_namesrv, group=unique_group + "_p") as producer:
        await create_topic(producer.instance, unique_topic, queues=2)
        await producer.send(Message(topic=unique_topic, body=b"x"))
        assert producer.tree().render(details=False) == shapes["producer"]
    async with PushConsumer(
        group=unique_group,
        subscriptions={unique_topic: "*"},
        handler=handle,
        namesrv=rocketmq_namesrv,
        options=PushOptions(orderly=True),
    ) as push:  # fmt: skip
        assert push.tree().render(details=False) == shapes["push-consumer (orderly)"]
    async with PullConsumer(
        group=unique_group + "_l", topics=[unique_topic], namesrv=rocketmq_namesrv
    ) as pull:
        assert pull.tree().render(details=False) == shapes["pull-consumer"]
