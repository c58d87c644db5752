"""The trace hooks: the records a handler call and a send make, and the options checked."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from rocketmq_actors.cluster.options import ClientOptions
from rocketmq_actors.consumer.core.dispatch import Dispatcher
from rocketmq_actors.consumer.core.message import ReceivedMessage
from rocketmq_actors.consumer.push import PushConsumer
from rocketmq_actors.errors import ConfigError
from rocketmq_actors.producer import Message, Producer
from rocketmq_actors.producer.result import SendStatus, new_send_result
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.records import decode_records
from rocketmq_actors.protocol.trace import (
    RMQ_SYS_TRACE_TOPIC,
    ConsumeReturnType,
    PubRecord,
    SubAfterRecord,
    SubBeforeRecord,
    TraceMessageType,
)
from rocketmq_actors.testing.stored import encode_stored
from rocketmq_actors.trace import ConsumeTrace, SendTrace, TraceDispatcher, trace_topic


async def _never(topic: str, body: bytes, keys: list[str]) -> None:
    raise AssertionError("not sent in these tests")


def _dispatcher() -> TraceDispatcher:
    return TraceDispatcher(_never, group="G", topic=RMQ_SYS_TRACE_TOPIC)


def _message(props: dict[str, str] | None = None) -> ReceivedMessage[Any]:
    properties = {"UNIQ_KEY": "ID1", "KEYS": "a b", "MSG_REGION": "R1", **(props or {})}
    stored = encode_stored(topic="ns%T", body=b"x", properties=properties)
    (message,) = decode_records(stored, ReceivedMessage)
    return message


def _records(dispatcher: TraceDispatcher) -> list[Any]:
    return list(dispatcher._queue)


@pytest.mark.parametrize(
    ("behaviour", "code"),
    [("return", ConsumeReturnType.SUCCESS), ("raise", ConsumeReturnType.EXCEPTION),
     ("nack", ConsumeReturnType.FAILED), ("overrun", ConsumeReturnType.TIME_OUT),
     ("raise TimeoutError", ConsumeReturnType.EXCEPTION)],
)  # fmt: skip
async def test_a_handler_call_writes_sub_before_and_sub_after(
    behaviour: str, code: ConsumeReturnType
) -> None:
    async def handler(message: ReceivedMessage[Any]) -> None:
        if behaviour == "raise":
            raise RuntimeError("no")
        if behaviour == "raise TimeoutError":  # its own, within consume_timeout
            raise TimeoutError("the handler's own")
        if behaviour == "nack":
            message.nack()
        if behaviour == "overrun":  # past consume_timeout (Java: TIME_OUT)
            await anyio.sleep_forever()

    traced = _dispatcher()
    dispatcher = Dispatcher(
        "ns%G", handler=handler, batch_handler=None, consume_timeout=0.05, tracing=None,
        fail=lambda exc: None, namespace="ns",
        msg_trace=ConsumeTrace(traced, "ns%G", "ns"),
    )  # fmt: skip
    assert await dispatcher.invoke([_message()], timed=True) is (behaviour == "return")
    before, after = _records(traced)
    assert isinstance(before, SubBeforeRecord) and isinstance(after, SubAfterRecord)
    assert (before.group, before.region_id, before.msg_id, before.keys, before.topic) == (
        "G", "R1", "ID1", "a b", "T"
    )  # fmt: skip
    assert after.request_id == before.request_id and after.group == "G"
    assert (after.context_code, after.success) == (code, behaviour == "return")
    assert after.timestamp >= before.timestamp and after.cost_ms >= 0


async def test_a_message_with_trace_off_is_not_traced() -> None:
    async def handler(message: ReceivedMessage[Any]) -> None:
        pass

    traced = _dispatcher()
    dispatcher = Dispatcher(
        "G", handler=handler, batch_handler=None, consume_timeout=None, tracing=None,
        fail=lambda exc: None, msg_trace=ConsumeTrace(traced, "G", None),
    )  # fmt: skip
    assert await dispatcher.invoke([_message({"TRACE_ON": "false"})])
    assert _records(traced) == []


def test_pub_record_of_a_result_and_none_without_a_region() -> None:
    traced = _dispatcher()
    hooks = SendTrace(traced, "ns%PG", "ns", lambda topic, broker: f"{broker}:10911")
    queue = MessageQueue("T", "b1", 0)
    message = Message(topic="T", body=b"abc", tags="t", keys=["k1", "k2"], delay_level=2)
    result = new_send_result(SendStatus.SEND_OK, "ID", "OFF", queue, 5, None, "R")
    hooks.pub(message, result, started_ms=1)
    hooks.pub(message, new_send_result(SendStatus.SEND_OK, "ID", "OFF", queue, 5, None, None), 1)
    hooks.pub(message, None, 1)  # a failed send: no result, no record (as Java)
    switched_off = new_send_result(SendStatus.SEND_OK, "ID", "OFF", queue, 5, None, "R",
                                   trace_on=False)  # fmt: skip
    hooks.pub(message, switched_off, 1)  # the broker's TRACE_ON=false: none (isTraceOn)
    (pub,) = _records(traced)
    assert isinstance(pub, PubRecord)
    assert (pub.group, pub.topic, pub.store_host, pub.keys, pub.body_length) == (
        "PG", "T", "b1:10911", "k1 k2", 3
    )  # fmt: skip
    assert (pub.msg_type, pub.region_id, pub.timestamp, pub.success) == (
        TraceMessageType.DELAY, "R", 1, True
    )  # fmt: skip


def test_trace_options() -> None:
    assert trace_topic(False, None) is None
    assert trace_topic(True, None) == RMQ_SYS_TRACE_TOPIC
    assert trace_topic(False, "MyTrace") == "MyTrace"  # a topic of one's own turns it on
    with pytest.raises(ConfigError, match="trace"):
        trace_topic("yes", None)
    with pytest.raises(ConfigError, match="trace_topic"):
        trace_topic(True, 5)
    with pytest.raises(ConfigError, match="trace_topic"):
        trace_topic(True, "bad topic!")


def test_clients_check_the_options_before_any_io() -> None:
    with pytest.raises(ConfigError):
        Producer(namesrv="127.0.0.1:1", client=ClientOptions(trace="on"))  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        PushConsumer(
            group="G",
            subscriptions={"T": "*"},
            namesrv="127.0.0.1:1",
            client=ClientOptions(trace_topic="a b"),
        )  # fmt: skip
    producer = Producer(namesrv="127.0.0.1:1", client=ClientOptions(trace_topic="MyTrace"))
    assert producer._group.trace is not None and producer._group.trace.dispatcher.topic == "MyTrace"
    assert Producer(namesrv="127.0.0.1:1")._group.trace is None
