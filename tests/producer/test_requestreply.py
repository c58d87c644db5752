"""Request-reply against a fake broker that answers the request's send and pushes the reply
(PUSH_REPLY_MESSAGE_TO_CLIENT, 326) itself: the correlation table, timeouts, stop, and the
responder's SEND_REPLY_MESSAGE_V2 (the real broker: test_requestreply_real.py)."""

from __future__ import annotations

import asyncio
import gc
import time
import weakref
import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, cast

import anyio
import pytest

from rocketmq_actors.cluster.requests import Handler
from rocketmq_actors.errors import BrokerError, ClientClosed, InvalidMessage, ReplyTimeout
from rocketmq_actors.producer import Producer
from rocketmq_actors.producer.requestreply import reply, reply_properties
from rocketmq_actors.protocol.codes import RequestCode, ResponseCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.protocol.events import BrokerRequest
from rocketmq_actors.protocol.messages import Message, decode_properties, encode_properties
from rocketmq_actors.runtime.router import REPLY_EVENTS
from rocketmq_actors.runtime.waiters import Waiter, wait_done
from rocketmq_actors.testing.fakeserver import FakePeer, FakeServer, route_body
from tests.slack import slack

from .test_deadlines import NameServer


def push_reply(correlation_id: str, body: bytes, *, sys_flag: int = 0) -> RemotingCommand:
    """A 326 as ReplyMessageProcessor.pushReplyMessage builds it."""
    props = {"CORRELATION_ID": correlation_id, "MSG_TYPE": "reply", "CLUSTER": "C"}
    ext = {
        "producerGroup": "R", "topic": "C_REPLY_TOPIC", "queueId": "0", "sysFlag": str(sys_flag),
        "bornTimestamp": "1", "flag": "0", "properties": encode_properties(props),
        "bornHost": "/127.0.0.1:1", "storeHost": "/127.0.0.1:10911", "storeTimestamp": "2",
    }  # fmt: skip
    return RemotingCommand.request(RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, ext, body)


class Broker:
    """Answers sends; with ``answer`` set, pushes it as the reply to each request it stores,
    and records the client's answers to its pushes and the replies the client sends."""

    def __init__(self, answer: bytes | None = b"pong", reply_code: int = ResponseCode.SUCCESS):
        self.answer = answer
        self.reply_code = reply_code
        self.requests: list[dict[str, str]] = []
        self.replies: list[RemotingCommand] = []  # SEND_REPLY_MESSAGE_V2 the client sent
        self.peer: FakePeer | None = None

    async def __call__(self, peer: FakePeer, cmd: RemotingCommand) -> None:
        self.peer = peer
        if cmd.code == RequestCode.SEND_MESSAGE_V2:
            props = decode_properties(cmd.ext_fields.get("i", ""))
            self.requests.append(props)
            ext = {"msgId": "AB", "queueId": cmd.ext_fields.get("e", "0"), "queueOffset": "1"}
            await peer.reply(cmd, ext_fields=ext)
            if self.answer is not None and "CORRELATION_ID" in props:
                push = push_reply(props["CORRELATION_ID"], self.answer)
                push.opaque = 9000 + len(self.requests)
                await peer.send(push)
        elif cmd.code == RequestCode.SEND_REPLY_MESSAGE_V2:
            self.replies.append(cmd)
            remark = None if self.reply_code == ResponseCode.SUCCESS else "channel not found"
            ext = {"msgId": "0", "queueId": "0", "queueOffset": "0"}
            await peer.reply(cmd, self.reply_code, remark=remark, ext_fields=ext)
        elif not cmd.is_oneway:
            await peer.reply(cmd)


@asynccontextmanager
async def producer_on(
    broker: Broker, handlers: dict[type[BrokerRequest], Handler] | None = None
) -> AsyncIterator[Producer]:
    """A started producer against ``broker``; its mailbox serves ``handlers`` too."""
    async with FakeServer(broker) as fake:
        routes = {"T": route_body(("broker-a", fake.addr)),
                  "C_REPLY_TOPIC": route_body(("broker-a", fake.addr), queues=1)}  # fmt: skip
        async with FakeServer(NameServer(routes)) as ns:
            producer = Producer(namesrv=ns.addr, group="G", topics=["T"])
            if handlers is not None:
                producer._group._broker_handlers = lambda: handlers  # type: ignore[method-assign]
            async with producer:
                yield producer


async def test_request_returns_the_pushed_reply_and_frees_its_entry() -> None:
    broker = Broker(b"pong")
    async with producer_on(broker) as producer:
        with anyio.fail_after(5):
            answer = await producer.request(Message(topic="T", body=b"ping"), timeout=3)
        assert answer.body == b"pong" and answer.topic == "C_REPLY_TOPIC"
        sent = broker.requests[0]
        assert answer.correlation_id == sent["CORRELATION_ID"]
        assert sent["REPLY_TO_CLIENT"] == producer.instance.client_id
        assert 0 < int(sent["TTL"]) <= 3000
        assert len(producer._group.replies) == 0 and producer._group.replies.replies == 1
        assert (REPLY_EVENTS[0], answer.correlation_id) not in producer.instance.router._owners
        assert broker.peer is not None
        (response,) = await broker.peer.wait_responses(1)  # the broker waits for an answer
        assert response.code == ResponseCode.SUCCESS and response.opaque == 9001


async def test_no_reply_is_a_reply_timeout_and_a_late_reply_is_dropped_as_java_does() -> None:
    """Issue 44: a late reply was answered SYSTEM_ERROR, so a Java replier's send of it threw
    after three attempts; the Java requester answers SUCCESS and drops it, and so do we."""
    broker = Broker(answer=None)
    async with producer_on(broker) as producer:
        with anyio.fail_after(5), pytest.raises(ReplyTimeout) as caught:
            await producer.request(Message(topic="T", body=b"ping"), timeout=0.3)
        correlation_id = broker.requests[0]["CORRELATION_ID"]
        assert caught.value.correlation_id == correlation_id and caught.value.topic == "T"
        assert len(producer._group.replies) == 0 and producer._group.replies.timeouts == 1
        assert broker.peer is not None
        late = push_reply(correlation_id, b"late")
        late.opaque = 777
        await broker.peer.send(late)
        with anyio.fail_after(5):
            (response,) = await broker.peer.wait_responses(1)
        assert response.opaque == 777 and response.code == ResponseCode.SUCCESS
        assert producer.instance.router.late_replies == 1


class Stalled(Broker):
    """A broker that never answers a heartbeat (it serves sends as :class:`Broker` does)."""

    def __init__(self) -> None:
        super().__init__(b"pong")
        self.codes: list[int] = []

    async def __call__(self, peer: FakePeer, cmd: RemotingCommand) -> None:
        self.codes.append(cmd.code)
        if cmd.code == RequestCode.HEART_BEAT:
            await anyio.sleep_forever()
        await super().__call__(peer, cmd)


@pytest.mark.parametrize("timeout", [1.0, 4.0])
async def test_the_first_request_to_a_topic_keeps_its_timeout_with_a_silent_broker(
    timeout: float,
) -> None:
    """Before: ``request(timeout=1.0)`` took 3.02 s - the heartbeat before a topic's first
    request waited for every broker, then the request went out with 1 ms left. Now the
    heartbeat spends the request's own budget: within 1 s nothing is sent (the budget went
    on the silent broker's heartbeat); with 4 s the heartbeat gives up on it after the
    client's 3 s request timeout and the request goes out (to either broker)."""
    broker, silent = Broker(b"pong"), Stalled()
    async with FakeServer(broker) as fake, FakeServer(silent) as stalled:
        routes = {"T": route_body(("broker-a", fake.addr), ("broker-b", stalled.addr))}
        async with FakeServer(NameServer(routes)) as ns, Producer(namesrv=ns.addr, group="G") as p:
            p.instance.routes._routes.clear()  # (as if the start-up had not looked T up)
            began = time.monotonic()
            with anyio.fail_after(timeout + 10):
                if timeout < 3:
                    with pytest.raises(ReplyTimeout) as caught:
                        await p.request(Message(topic="T", body=b"ping"), timeout=timeout)
                    assert not caught.value.sent and not caught.value.outcome_unknown
                    assert "not sent" in str(caught.value)
                else:
                    answer = await p.request(Message(topic="T", body=b"ping"), timeout=timeout)
                    assert answer.body == b"pong"
            assert time.monotonic() - began < timeout + slack(began)
            assert RequestCode.HEART_BEAT in silent.codes
            assert len(broker.requests) + len(silent.requests) == (0 if timeout < 3 else 1)
            assert len(p._group.replies) == 0


async def test_submit_request_futures_resolve_independently() -> None:
    broker = Broker(b"pong")
    async with producer_on(broker) as producer:
        futures = [
            await producer.submit_request(Message(topic="T", body=b"%d" % i), timeout=3)
            for i in range(3)
        ]
        with anyio.fail_after(5):
            answers = [await f for f in futures]
        ids = [r["CORRELATION_ID"] for r in broker.requests]
        assert [a.correlation_id for a in answers] == ids and len(set(ids)) == 3
        assert all(f.done() and f.result().body == b"pong" for f in futures)
        assert len(producer._group.replies) == 0


async def test_stopping_the_producer_fails_the_pending_requests() -> None:
    broker = Broker(answer=None)
    async with producer_on(broker) as producer:
        future = await producer.submit_request(Message(topic="T", body=b"x"), timeout=30)
        assert len(producer._group.replies) == 1 and not future.done()
    assert future.done() and isinstance(future.exception(), ClientClosed)
    assert len(producer._group.replies) == 0


async def test_a_failed_submit_request_future_nobody_awaits_is_not_reported() -> None:
    reported: list[dict[str, Any]] = []
    asyncio.get_running_loop().set_exception_handler(lambda _, context: reported.append(context))
    broker = Broker(answer=None)
    async with producer_on(broker) as producer:
        dropped = await producer.submit_request(Message(topic="T", body=b"x"), timeout=0.2)
        kept = await producer.submit_request(Message(topic="T", body=b"y"), timeout=0.2)
        with anyio.fail_after(5):
            await wait_done(cast(Waiter, dropped))
        assert producer._group.replies.timeouts >= 1
        collected = weakref.ref(dropped)
        del dropped
        gc.collect()  # (asyncio reports an unretrieved error when the future is collected)
        assert not [c for c in reported if "never retrieved" in c["message"]], reported
        assert collected() is None  # (so it was collected: a report would have kept it alive)
        with anyio.fail_after(5), pytest.raises(ReplyTimeout):  # the error is still raised
            await kept


async def test_a_compressed_reply_is_decompressed() -> None:
    broker = Broker(answer=None)
    async with producer_on(broker) as producer:
        future = await producer.submit_request(Message(topic="T", body=b"x"), timeout=3)
        assert broker.peer is not None
        push = push_reply(broker.requests[0]["CORRELATION_ID"], zlib.compress(b"big" * 100),
                          sys_flag=1)  # fmt: skip
        push.opaque = 5
        await broker.peer.send(push)
        with anyio.fail_after(5):
            assert (await future).body == b"big" * 100


def _request_props(**extra: str) -> dict[str, str]:
    props = {
        "CLUSTER": "C",
        "CORRELATION_ID": "id-1",
        "REPLY_TO_CLIENT": "1.2.3.4@x",
        "TTL": "3000",
    }
    props.update(extra)
    return props


def test_reply_properties_are_create_reply_message_s() -> None:
    topic, props = reply_properties(_request_props(UNIQ_KEY="u"))
    assert topic == "C_REPLY_TOPIC"
    assert props == {"MSG_TYPE": "reply", "CORRELATION_ID": "id-1",
                     "REPLY_TO_CLIENT": "1.2.3.4@x", "TTL": "3000"}  # fmt: skip


@pytest.mark.parametrize("missing", ["CLUSTER", "CORRELATION_ID", "REPLY_TO_CLIENT", "TTL"])
def test_a_message_that_is_no_request_cannot_be_replied_to(missing: str) -> None:
    props = _request_props()
    del props[missing]
    with pytest.raises(InvalidMessage, match=missing):
        reply_properties(props)


class _Received:
    def __init__(self, properties: dict[str, str]) -> None:
        self.properties = properties
        self.broker_name = "broker-a"


async def test_reply_sends_send_reply_message_v2_to_the_reply_topic() -> None:
    broker = Broker(answer=None)
    async with producer_on(broker) as producer:
        with anyio.fail_after(5):
            await reply(producer, _Received(_request_props()), b"pong")
        (cmd,) = broker.replies
        assert cmd.ext_fields["b"] == "C_REPLY_TOPIC" and cmd.ext_fields["a"] == "G"
        assert cmd.body == b"pong"
        assert decode_properties(cmd.ext_fields["i"])["MSG_TYPE"] == "reply"
        with pytest.raises(InvalidMessage, match="body"):
            await producer.reply(_Received(_request_props()), "text")  # type: ignore[arg-type]


async def test_a_reply_the_broker_cannot_push_is_a_broker_error() -> None:
    broker = Broker(answer=None, reply_code=ResponseCode.SYSTEM_ERROR)
    async with producer_on(broker) as producer:
        with anyio.fail_after(5), pytest.raises(BrokerError, match="channel not found"):
            await producer.reply(_Received(_request_props()), b"pong")


async def test_reply_to_something_not_a_received_message_is_invalid_before_any_io() -> None:
    with pytest.raises(InvalidMessage, match="received message"):
        await reply(cast(Any, None), cast(Any, b"not a message"), b"x")  # (no client needed)


async def test_a_reply_is_never_queued_behind_a_slow_broker_request() -> None:
    """Replies share the producer's mailbox with transaction checks, which are served
    ``check_concurrency`` at a time: a reply must not wait for a checker to finish."""
    from rocketmq_actors.protocol.events import TransactionCheck
    from rocketmq_actors.runtime.router import Inbound

    checking = anyio.Event()

    async def slow_check(inbound: Inbound) -> None:  # a checker that never returns
        checking.set()
        await anyio.sleep_forever()

    broker = Broker(b"pong")
    async with producer_on(broker, {TransactionCheck: slow_check}) as producer:
        check = cast(Any, TransactionCheck.__new__(TransactionCheck))  # (never read)
        for _ in range(producer._group.check_concurrency):  # every slot taken
            await producer._group.mailbox.post(Inbound(cast(Any, None), cast(Any, None), check))
        with anyio.fail_after(5):
            await checking.wait()
            answer = await producer.request(Message(topic="T", body=b"ping"), timeout=3)
        assert answer.body == b"pong"
