"""Producer.recall against fake servers: the request it sends, the typed error of each of the
broker's refusals (RecallMessageProcessor), and what is refused before any I/O."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest

from rocketmq_actors.cluster.options import ClientOptions
from rocketmq_actors.errors import (
    InvalidMessage,
    InvalidRecallHandle,
    RecallDisabled,
    RecallFailed,
    RecallTooLate,
    UnsupportedByBroker,
)
from rocketmq_actors.producer import Producer, ProducerOptions, RecallResult
from rocketmq_actors.protocol.codes import RequestCode, ResponseCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.protocol.recall import RecallHandle
from rocketmq_actors.testing.fakeserver import FakePeer, FakeServer, route_body

V4_9_7, V5_3_1, V5_3_3 = 407, 475, 479
HANDLE = RecallHandle(topic="T", broker_name="b", deliver_at_ms=4102444800000, msg_id="ID1")


class _Broker:
    """Answers heartbeats as ``version``, RECALL_MESSAGE with ``code`` and ``remark``."""

    def __init__(self, version: int, code: int = ResponseCode.SUCCESS, remark: str = "") -> None:
        self.version, self.code, self.remark = version, code, remark
        self.recalls: list[RemotingCommand] = []

    async def __call__(self, peer: FakePeer, cmd: RemotingCommand) -> None:
        ext: dict[str, str] = {}
        if cmd.code == RequestCode.RECALL_MESSAGE:
            self.recalls.append(cmd)
            if self.code == ResponseCode.SUCCESS:
                ext = {"msgId": "ID1", "MSG_REGION": "DefaultRegion"}
            reply = cmd.response(self.code, remark=self.remark or None, ext_fields=ext)
        else:
            reply = cmd.response(ResponseCode.SUCCESS)
        reply.version = self.version
        await peer.send(reply)


@asynccontextmanager
async def _producer(broker: _Broker, namespace: str | None = None) -> AsyncIterator[Producer]:
    async with FakeServer(broker) as b:
        body = route_body(("b", b.addr))

        async def namesrv(peer: FakePeer, cmd: RemotingCommand) -> None:
            await peer.reply(cmd, body=body)

        # send_timeout, recall's deadline: these tests are about what is sent and refused, not
        # time; a make test run once took the fake broker's heartbeat answer past the default
        options = ProducerOptions(send_timeout=10.0)
        client = ClientOptions(namespace=namespace)
        async with FakeServer(namesrv) as ns, Producer(namesrv=ns.addr, group="PG",
                                                       options=options,
                                                       client=client) as producer:  # fmt: skip
            with anyio.fail_after(20):
                yield producer


async def test_recall_goes_to_the_handles_broker_and_returns_the_result() -> None:
    broker = _Broker(V5_3_3)
    async with _producer(broker) as producer:
        result = await producer.recall("T", HANDLE.encode())
    assert result == RecallResult(topic="T", broker_name="b", msg_id="ID1",
                                  deliver_at_ms=4102444800000)  # fmt: skip
    (cmd,) = broker.recalls
    assert cmd.ext_fields["producerGroup"] == "PG"
    assert cmd.ext_fields["topic"] == "T" and cmd.ext_fields["bname"] == "b"
    assert cmd.ext_fields["recallHandle"] == HANDLE.encode()


async def test_a_namespaced_producer_recalls_the_wrapped_topic() -> None:
    broker = _Broker(V5_3_3)
    handle = RecallHandle(topic="ns%T", broker_name="b", deliver_at_ms=1, msg_id="ID1").encode()
    async with _producer(broker, namespace="ns") as producer:
        result = await producer.recall("T", handle)
        with pytest.raises(InvalidRecallHandle, match="for topic 'T', not 'ns%T'"):
            await producer.recall("T", HANDLE.encode())
    assert result.topic == "T"
    assert [c.ext_fields["topic"] for c in broker.recalls] == ["ns%T"]


@pytest.mark.parametrize(
    ("code", "remark", "error"),
    [
        (ResponseCode.NO_PERMISSION, "recall failed, operation is forbidden", RecallDisabled),
        (ResponseCode.ILLEGAL_OPERATION, "recall failed, timestamp invalid", RecallTooLate),
        (ResponseCode.ILLEGAL_OPERATION, "recall failed, topic not match", RecallFailed),
        (ResponseCode.TOPIC_NOT_EXIST, "recall failed, the topic[T] not exist", RecallFailed),
        (ResponseCode.SLAVE_NOT_AVAILABLE, "recall failed, broker service not available",
         RecallFailed),
        (ResponseCode.REQUEST_CODE_NOT_SUPPORTED, "request type 370 not supported",
         UnsupportedByBroker),
    ],
)  # fmt: skip
async def test_each_refusal_is_a_typed_error(code: int, remark: str, error: type) -> None:
    broker = _Broker(V5_3_3, code, remark)
    async with _producer(broker) as producer:
        with pytest.raises(error) as info:
            await producer.recall("T", HANDLE.encode())
    assert len(broker.recalls) == 1
    if isinstance(info.value, RecallFailed):
        assert info.value.code == code and info.value.remark == remark
        assert info.value.retriable is (code == ResponseCode.TOPIC_NOT_EXIST)
    if error is RecallFailed:  # the generic one: not one of the two named reasons
        assert not isinstance(info.value, (RecallDisabled, RecallTooLate))


@pytest.mark.parametrize("version", [V4_9_7, V5_3_1])
async def test_a_broker_without_recall_is_refused_before_the_request(version: int) -> None:
    broker = _Broker(version)
    async with _producer(broker) as producer:
        with pytest.raises(UnsupportedByBroker, match=r"needs a RocketMQ 5\.3\.2 or newer broker"):
            await producer.recall("T", HANDLE.encode())
    assert broker.recalls == []


@pytest.mark.parametrize(
    ("topic", "handle", "match"),
    [
        ("T", "not a handle", "not a recall handle"),
        ("T", None, "not a recall handle"),
        ("T", "djEgVCBiIDE=", "not a recall handle"),  # four fields
        ("Other", HANDLE.encode(), "is for topic 'T', not 'Other'"),
        ("%RETRY%G", HANDLE.encode(), "retry and DLQ topics"),
        ("", HANDLE.encode(), "topic is empty"),
    ],
)
async def test_bad_input_is_refused_before_any_io(topic: str, handle: str, match: str) -> None:
    broker = _Broker(V5_3_3)
    async with _producer(broker) as producer:
        with pytest.raises(InvalidMessage, match=match):
            await producer.recall(topic, handle)
    assert broker.recalls == []


async def test_a_handle_of_a_broker_not_in_the_route() -> None:
    broker = _Broker(V5_3_3)
    other = RecallHandle(topic="T", broker_name="gone", deliver_at_ms=1, msg_id="X").encode()
    async with _producer(broker) as producer:
        with pytest.raises(RecallFailed, match="no master of gone"):
            await producer.recall("T", other)
    assert broker.recalls == []
