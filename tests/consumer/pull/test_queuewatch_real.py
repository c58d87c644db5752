"""``PullConsumer.watch_queues`` (Java's ``registerTopicMessageQueueChangeListener``) against the
real broker: a topic given more queues is heard of at the next look."""

from __future__ import annotations

import anyio
import pytest

from rocketmq_actors import admin
from rocketmq_actors.consumer.pull import PullConsumer, PullOptions
from rocketmq_actors.errors import ConfigError
from rocketmq_actors.producer import Producer, create_topic
from rocketmq_actors.protocol.bodies import MessageQueue

pytestmark = pytest.mark.integration


async def test_a_listener_hears_of_new_queues_and_one_that_raises_stops_nothing(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    heard: list[tuple[str, set[MessageQueue]]] = []
    changed = anyio.Event()

    async def listener(topic: str, queues: set[MessageQueue]) -> None:
        heard.append((topic, queues))
        changed.set()
        raise RuntimeError("a listener's own bug")  # logged; the watch goes on

    async with Producer(namesrv=rocketmq_namesrv, group=f"{unique_group}_p") as producer:
        await create_topic(producer.instance, unique_topic, queues=2)
        options = PullOptions(topic_metadata_check_interval=0.2)
        async with PullConsumer(group=unique_group, namesrv=rocketmq_namesrv,
                                options=options) as consumer:  # fmt: skip
            now = await consumer.watch_queues(unique_topic, listener)
            assert {q.queue_id for q in now} == {0, 1} and not heard  # (no call at first)
            await admin.update_topic(producer.instance, unique_topic, read_queues=4,
                                     write_queues=4)  # fmt: skip
            with anyio.fail_after(30):
                await changed.wait()
            topic, queues = heard[0]
            assert topic == unique_topic and {q.queue_id for q in queues} == {0, 1, 2, 3}
            assert consumer.running  # (the listener raised: nothing else happened)
            with pytest.raises(ConfigError):
                await consumer.watch_queues("bad topic", listener)
