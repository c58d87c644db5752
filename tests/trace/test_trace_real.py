"""Message trace on the real broker: what our producer and consumer write to
RMQ_SYS_TRACE_TOPIC is found by key as Java's trace is, and ``mqadmin queryMsgTraceById``
(MQAdminStartup from the rocketmq-tools jar of the session's version) shows it: the Pub of our
producer group and the consumption of our consumer group. The session broker has no
traceTopicEnable: RMQ_SYS_TRACE_TOPIC is auto-created by the first trace message."""

from __future__ import annotations

import time
import uuid
from typing import Any

import anyio
import pytest

from rocketmq_actors import query
from rocketmq_actors.cluster.options import ClientOptions
from rocketmq_actors.consumer.pop import PopConsumer, PopOptions
from rocketmq_actors.consumer.pull import PullConsumer, PullOptions
from rocketmq_actors.consumer.push import ConsumeFrom, PushConsumer, PushOptions
from rocketmq_actors.producer import Message, Producer, create_topic
from rocketmq_actors.producer.transaction import LocalTransactionState, TransactionProducer
from rocketmq_actors.protocol.trace import (
    RMQ_SYS_TRACE_TOPIC,
    EndTransactionRecord,
    PubRecord,
    SubAfterRecord,
    SubBeforeRecord,
    TraceMessageType,
    TraceRecord,
    decode_records,
)
from rocketmq_actors.testing.cluster import LocalCluster
from tests.broker_state import until

from ..cli._run import ok_json
from ..test_query_java_real import mqadmin

pytestmark = pytest.mark.integration


async def trace_records(instance: Any, msg_id: str, since: int) -> list[TraceRecord]:
    """The trace records about ``msg_id`` (found by key, as queryMsgTraceById finds them)."""
    try:
        found = await query.query_messages(instance, RMQ_SYS_TRACE_TOPIC, msg_id, begin_ms=since)
    except Exception:  # the trace topic may not exist yet
        return []
    return [r for m in found.messages for r in decode_records(m.body) if r.msg_id == msg_id]


def kinds(records: list[TraceRecord]) -> set[type]:
    return {type(r) for r in records}


async def consume_it(kind: Any, namesrv: str, group: str, topic: str, msg_id: str) -> None:
    """Run a traced ``kind`` of consumer (push or POP) of ``group`` until it has handled
    ``msg_id``; its stop flushes its trace records."""
    got = anyio.Event()

    async def handle(message: Any) -> None:
        if message.msg_id == msg_id:
            got.set()

    options = ClientOptions(trace=True)
    consumer: PushConsumer[bytes] | PopConsumer[bytes]
    if kind is PopConsumer:
        consumer = PopConsumer(
            namesrv=namesrv, group=group, subscriptions={topic: "*"}, handler=handle,
            options=PopOptions(consume_from=ConsumeFrom.FIRST_OFFSET), client=options,
        )  # fmt: skip
    else:
        consumer = PushConsumer(
            namesrv=namesrv, group=group, subscriptions={topic: "*"}, handler=handle,
            options=PushOptions(consume_from=ConsumeFrom.FIRST_OFFSET), client=options,
        )  # fmt: skip
    async with consumer:
        with anyio.fail_after(30):
            await got.wait()


async def read_trace(namesrv: str, group: str, msg_id: str, since: int, wanted: set[type]) -> list[
    TraceRecord
]:  # fmt: skip
    """The trace records about ``msg_id``, once those of every ``wanted`` type are there."""
    async with Producer(namesrv=namesrv, group=group) as reader:
        return await until(
            lambda: trace_records(reader.instance, msg_id, since),
            lambda found: wanted <= kinds(found),
        )


async def test_produced_and_consumed_with_trace_shown_by_mqadmin(
    rocketmq_namesrv: str, unique_group: str, unique_topic: str, request: pytest.FixtureRequest
) -> None:
    version = str(request.config.getoption("--rocketmq-version"))
    since = time.time_ns() // 1_000_000 - 1000
    key = f"tr-{uuid.uuid4().hex[:8]}"
    producer_group, consumer_group = f"{unique_group}_p", f"{unique_group}_c"
    async with Producer(
        namesrv=rocketmq_namesrv, group=producer_group, client=ClientOptions(trace=True)
    ) as producer:
        await create_topic(producer.instance, unique_topic, queues=2)
        sent = await producer.send(Message(topic=unique_topic, body=b"traced", tags="t", keys=key))
    await consume_it(PushConsumer, rocketmq_namesrv, consumer_group, unique_topic, sent.msg_id)
    # both stopped: their dispatchers flushed what they had
    records = await read_trace(rocketmq_namesrv, f"{unique_group}_q", sent.msg_id, since,
                               {PubRecord, SubBeforeRecord, SubAfterRecord})  # fmt: skip
    pub = next(r for r in records if isinstance(r, PubRecord))
    assert (pub.group, pub.topic, pub.keys, pub.tags, pub.success) == (
        producer_group, unique_topic, key, "t", True
    )  # fmt: skip
    assert pub.offset_msg_id == sent.offset_msg_id and pub.msg_type is TraceMessageType.NORMAL
    before = next(r for r in records if isinstance(r, SubBeforeRecord))
    after = next(r for r in records if isinstance(r, SubAfterRecord))
    assert before.group == after.group == consumer_group
    assert before.request_id == after.request_id and after.success and after.context_code == 0

    out = await anyio.to_thread.run_sync(
        lambda: mqadmin(version, "queryMsgTraceById", "-i", sent.msg_id, "-n", rocketmq_namesrv)
    )
    lines = [line.split() for line in out.splitlines()]
    shown_pub = next(w for w in lines if w[:1] == ["Pub"])
    sub = next(w for w in lines if w[:1] == ["Sub"])
    assert shown_pub[1] == producer_group and shown_pub[-1] == "success", out
    assert sub[1] == consumer_group, out  # (4.9.7's tools read it too)

    shown = await anyio.to_thread.run_sync(
        lambda: ok_json("message", "trace", sent.msg_id, "--namesrv", rocketmq_namesrv)
    )
    rows = {(r["type"], r["group"]) for r in shown["records"]}
    assert {("Pub", producer_group), ("SubBefore", consumer_group),
            ("SubAfter", consumer_group)} <= rows, shown  # fmt: skip
    assert sub[-1] == "success", out


async def test_transaction_writes_half_pub_and_end_transaction(
    rocketmq_namesrv: str, unique_group: str, unique_topic: str
) -> None:
    since = time.time_ns() // 1_000_000 - 1000

    async def check(message: Any) -> LocalTransactionState:
        return LocalTransactionState.COMMIT

    async def commit(message: Message, arg: object) -> LocalTransactionState:
        return LocalTransactionState.COMMIT

    async with TransactionProducer(
        namesrv=rocketmq_namesrv,
        group=unique_group,
        checker=check,
        client=ClientOptions(trace=True),
    ) as producer:
        await create_topic(producer.instance, unique_topic, queues=1)
        outcome = await producer.send_in_transaction(
            Message(topic=unique_topic, body=b"tx", keys="txk"), commit
        )
    records = await read_trace(rocketmq_namesrv, f"{unique_group}_q", outcome.send.msg_id, since,
                               {PubRecord, EndTransactionRecord})  # fmt: skip
    pub = next(r for r in records if isinstance(r, PubRecord))
    end = next(r for r in records if isinstance(r, EndTransactionRecord))
    assert pub.msg_type is TraceMessageType.TRANS_HALF and pub.group == unique_group
    assert (end.transaction_state, end.from_check, end.keys) == ("COMMIT_MESSAGE", False, "txk")
    assert end.store_host == pub.store_host != "" and end.topic == pub.topic == unique_topic


async def test_lite_pull_writes_sub_before_and_after_when_polled(
    rocketmq_namesrv: str, unique_group: str, unique_topic: str
) -> None:
    since = time.time_ns() // 1_000_000 - 1000
    async with Producer(namesrv=rocketmq_namesrv, group=f"{unique_group}_p") as producer:
        await create_topic(producer.instance, unique_topic, queues=1)
        sent = await producer.send(Message(topic=unique_topic, body=b"pulled"))
    async with PullConsumer(
        group=unique_group, topics=[unique_topic], namesrv=rocketmq_namesrv,
        options=PullOptions(auto_offset_reset="earliest"), client=ClientOptions(trace=True),
    ) as consumer:  # fmt: skip
        with anyio.fail_after(30):
            got: list[Any] = []
            while not got:
                got = [m for ms in (await consumer.getmany(timeout=1.0)).values() for m in ms]
    assert got[0].msg_id == sent.msg_id
    records = await read_trace(rocketmq_namesrv, f"{unique_group}_q", sent.msg_id, since,
                               {SubBeforeRecord, SubAfterRecord})  # fmt: skip
    after = next(r for r in records if isinstance(r, SubAfterRecord))
    assert after.group == unique_group and after.success
    assert PubRecord not in kinds(records)  # (that producer had no trace)


async def test_a_pop_consumer_writes_sub_before_and_after(
    rocketmq_namesrv: str, rocketmq_cluster: LocalCluster, unique_group: str, unique_topic: str
) -> None:
    if rocketmq_cluster.spec.is_4x:
        pytest.skip("POP needs a 5.x broker (test_pop_is_refused_on_4x runs on 4.x)")
    since = time.time_ns() // 1_000_000 - 1000
    async with Producer(namesrv=rocketmq_namesrv, group=f"{unique_group}_p") as producer:
        await create_topic(producer.instance, unique_topic, queues=2)
        sent = await producer.send(Message(topic=unique_topic, body=b"popped"))
    await consume_it(PopConsumer, rocketmq_namesrv, unique_group, unique_topic, sent.msg_id)
    records = await read_trace(rocketmq_namesrv, f"{unique_group}_q", sent.msg_id, since,
                               {SubBeforeRecord, SubAfterRecord})  # fmt: skip
    before = next(r for r in records if isinstance(r, SubBeforeRecord))
    after = next(r for r in records if isinstance(r, SubAfterRecord))
    assert before.group == after.group == unique_group
    assert after.success and before.request_id == after.request_id
