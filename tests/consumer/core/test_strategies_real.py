"""A user-supplied allocation strategy in a real group: two members share a topic as it says,
and a strategy that starts failing leaves the member with its previous queues."""

from __future__ import annotations

from collections.abc import Sequence

import anyio
import pytest

from rocketmq_actors.consumer.push import ConsumeFrom, PushConsumer, PushOptions
from rocketmq_actors.producer import Message, Producer, create_topic
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.records import MessageExt

pytestmark = pytest.mark.integration


class _Interleaved:
    """Queue k of every topic to client ``k % members`` (AVG would give blocks: 0-1, 2-3);
    raises while ``broken``."""

    def __init__(self) -> None:
        self.broken = False
        self.calls = 0

    def __call__(
        self, group: str, me: str, queues: Sequence[MessageQueue], clients: Sequence[str]
    ) -> list[MessageQueue]:
        self.calls += 1
        if self.broken:
            raise RuntimeError("strategy bug")
        index = list(clients).index(me)
        return [q for k, q in enumerate(queues) if k % len(clients) == index]


class _Member:
    def __init__(self) -> None:
        self.queues: list[MessageQueue] = []
        self.seen: list[MessageExt] = []
        self.changed = anyio.Event()

    def on_rebalance(self, queues: list[MessageQueue]) -> None:
        self.queues = queues
        self._wake()

    async def handle(self, message: MessageExt) -> None:
        self.seen.append(message)
        self._wake()

    def _wake(self) -> None:
        self.changed.set()
        self.changed = anyio.Event()

    def ids(self, topic: str) -> set[int]:
        return {q.queue_id for q in self.queues if q.topic == topic}


async def _until(members: Sequence[_Member], done: object, timeout: float = 40) -> None:
    assert callable(done)
    with anyio.fail_after(timeout):
        while not done():
            async with anyio.create_task_group() as tg:
                for member in members:

                    async def wait(m: _Member = member) -> None:
                        await m.changed.wait()
                        tg.cancel_scope.cancel()

                    tg.start_soon(wait)


def _to_queue(queues: Sequence[MessageQueue], message: Message, arg: object) -> MessageQueue:
    return next(q for q in queues if q.queue_id == arg)


async def test_two_members_share_a_topic_as_the_user_strategy_says(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    strategies = [_Interleaved(), _Interleaved()]
    members = [_Member(), _Member()]
    async with Producer(namesrv=rocketmq_namesrv, group=f"{unique_group}_p") as producer:
        await create_topic(producer.instance, unique_topic, queues=4)
        consumers = [
            PushConsumer(
                group=unique_group,
                subscriptions={unique_topic: "*"},
                handler=m.handle,
                on_rebalance=m.on_rebalance,
                namesrv=rocketmq_namesrv,
                options=PushOptions(
                    strategy=s, consume_from=ConsumeFrom.FIRST_OFFSET, rebalance_interval=1.0
                ),
            )
            for m, s in zip(members, strategies, strict=True)
        ]
        async with consumers[0] as first, consumers[1] as second:
            # each member computes its own share with its own strategy: interleaved, not blocks
            await _until(members, lambda: {frozenset(m.ids(unique_topic)) for m in members}
                         == {frozenset({0, 2}), frozenset({1, 3})})  # fmt: skip
            for queue_id in range(4):
                await producer.send(Message(topic=unique_topic, body=b"q%d" % queue_id),
                                    selector=_to_queue, arg=queue_id)  # fmt: skip
            await _until(members, lambda: sum(len(m.seen) for m in members) >= 4)
            for member in members:
                assert {m.queue_id for m in member.seen} == member.ids(unique_topic)
            # a strategy that fails: the member keeps its queues and goes on consuming
            broken, kept = first, members[0]
            before = sorted(kept.queues, key=lambda q: (q.topic, q.queue_id))
            strategies[0].broken = True
            calls = strategies[0].calls
            await broken._group.rebalancer.rebalance()
            assert strategies[0].calls > calls  # it was asked, and raised
            assert sorted(broken.assigned(), key=lambda q: (q.topic, q.queue_id)) == before
            queue_id = min(kept.ids(unique_topic))
            await producer.send(Message(topic=unique_topic, body=b"after"), selector=_to_queue,
                                arg=queue_id)  # fmt: skip
            await _until([kept], lambda: any(m.body == b"after" for m in kept.seen))
            assert second is not None
