"""A broadcasting pull consumer (Java's lite pull consumer with ``MessageModel.BROADCASTING``)
against the real broker: every member gets every queue, and commits go to a local file."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from rocketmq_actors.cluster.options import ClientOptions
from rocketmq_actors.consumer.core.options import MessageModel
from rocketmq_actors.consumer.pull import OffsetReset, PullConsumer, PullOptions
from rocketmq_actors.producer import Message, Producer, create_topic

from .test_lite_pull_real import _collect

pytestmark = pytest.mark.integration


def _member(namesrv: str, group: str, topic: str, name: str, offsets: Path) -> PullConsumer:
    options = PullOptions(model=MessageModel.BROADCASTING, offset_dir=offsets,
                          auto_offset_reset=OffsetReset.EARLIEST)  # fmt: skip
    return PullConsumer(group=group, topics=[topic], namesrv=namesrv, options=options,
                        client=ClientOptions(instance_name=name))  # fmt: skip


async def test_every_member_gets_every_message_and_resumes_from_its_own_file(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str, tmp_path: Path
) -> None:
    async with Producer(namesrv=rocketmq_namesrv, group=f"{unique_group}_p") as producer:
        await create_topic(producer.instance, unique_topic, queues=2)
        first = [b"m%d" % i for i in range(6)]
        for body in first:
            await producer.send(Message(topic=unique_topic, body=body))
        a = _member(rocketmq_namesrv, unique_group, unique_topic, "bc-a", tmp_path)
        async with a, _member(rocketmq_namesrv, unique_group, unique_topic, "bc-b", tmp_path) as b:
            for member in (a, b):  # (clustering would share the two queues between them)
                assert sorted(m.body for m in await _collect(member, 6)) == first
                assert len(member.assignment()) == 2
            await a.commit()
        found = await anyio.to_thread.run_sync(lambda: list(tmp_path.rglob("*.json")))
        files = sorted(p.relative_to(tmp_path).parts[-2:] for p in found)
        assert files == [(unique_group, "offsets.json")] * 2  # one per member, as Java's

        await producer.send(Message(topic=unique_topic, body=b"later"))
        async with _member(rocketmq_namesrv, unique_group, unique_topic, "bc-a", tmp_path) as a:
            assert [m.body for m in await _collect(a, 1)] == [b"later"]  # from its commit
