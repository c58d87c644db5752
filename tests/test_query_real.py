"""Query by key and unique key, view by offset id, against the real broker."""

from __future__ import annotations

import time

import pytest

from rocketmq_actors import query
from rocketmq_actors.producer import Message, Producer, create_topic
from tests.broker_state import until

pytestmark = pytest.mark.integration


async def test_query_by_key_and_unique_key_and_view_by_offset_id(
    rocketmq_namesrv: str, unique_group: str, unique_topic: str
) -> None:
    begin = time.time_ns() // 1_000_000 - 1000
    async with Producer(namesrv=rocketmq_namesrv, group=unique_group) as producer:
        await create_topic(producer.instance, unique_topic, queues=4)
        sent = [
            await producer.send(
                Message(topic=unique_topic, body=f"m{i}".encode(), keys=["order-7", f"k{i}"])
            )
            for i in range(5)
        ]
        other = await producer.send(Message(topic=unique_topic, body=b"x", keys=["order-8"]))
        instance = producer.instance

        async def by_key() -> query.QueryResult:
            return await query.query_messages(instance, unique_topic, "order-7", begin_ms=begin)

        result = await until(by_key, lambda r: len(r.messages) >= 5)
        assert sorted(m.msg_id for m in result.messages) == sorted(s.msg_id for s in sent)
        assert {m.body for m in result.messages} == {f"m{i}".encode() for i in range(5)}
        assert result.index_last_update_ms > 0 and result.failed == {}
        # a time range that ends before the sends finds nothing
        before = await query.query_messages(
            instance, unique_topic, "order-7", begin_ms=0, end_ms=begin - 60_000
        )
        assert before.messages == []

        found = await query.query_by_unique_key(instance, unique_topic, other.msg_id)
        assert found is not None and found.body == b"x" and found.keys == ["order-8"]

        viewed = await query.view_message(instance, sent[2].offset_msg_id)
        assert viewed.body == b"m2" and viewed.msg_id == sent[2].msg_id
        assert viewed.offset_msg_id == sent[2].offset_msg_id
        with pytest.raises(query.MessageNotFound):
            await query.view_message(instance, sent[2].offset_msg_id, topic="not-" + unique_topic)

        # either form through find_message
        assert (await query.find_message(instance, sent[3].offset_msg_id)).body == b"m3"
        by_uniq = await query.find_message(instance, sent[4].msg_id, topic=unique_topic)
        assert by_uniq.body == b"m4"
