"""FastStream's request/response and ``reply_to`` on the RocketMQ broker, in memory
(TestRocketMQBroker): ``broker.request`` / ``publisher.request`` return the handler's value as
a FastStream message, a request nobody answers is a typed timeout, and a publisher's
``reply_to`` sends a subscriber's return value to that topic."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from faststream.exceptions import SubscriberNotFound

from rocketmq_actors.errors import ConfigError, ReplyTimeout, RocketMQError
from rocketmq_actors.faststream import (
    RequestTimeoutError,
    RocketMQBroker,
    RocketMQMessage,
    RocketMQReplyMessage,
    RocketMQResponse,
    TestRocketMQBroker,
)
from rocketmq_actors.protocol.messages import Property


async def test_request_returns_the_handlers_value_as_a_message() -> None:
    broker = RocketMQBroker("127.0.0.1:9876")
    seen: list[tuple[str, str, str | None]] = []

    @broker.subscriber("rpc", group="server")
    async def serve(body: dict[str, int], message: RocketMQMessage) -> dict[str, int]:
        raw = message.raw_message.properties
        seen.append((message.reply_to, raw[Property.CLUSTER], raw.get(Property.CORRELATION_ID)))
        return {"sum": body["a"] + body["b"]}

    async with TestRocketMQBroker(broker) as br:
        reply = await br.request({"a": 1, "b": 2}, "rpc", correlation_id="c-1", timeout=5)
        assert isinstance(reply, RocketMQReplyMessage)
        assert await reply.decode() == {"sum": 3}
        assert reply.correlation_id == "c-1"  # FastStream's, as Kafka's request keeps it
        assert reply.content_type == "application/json"
        serve.mock.assert_called_once_with({"a": 1, "b": 2})
    ((reply_to, cluster, correlation),) = seen
    assert reply_to == f"{cluster}_REPLY_TOPIC" and correlation  # a RocketMQ request


async def test_publisher_request_text_and_response_headers() -> None:
    broker = RocketMQBroker("127.0.0.1:9876")

    @broker.subscriber("echo", group="server", tags="ping")
    async def echo(body: str, message: RocketMQMessage) -> RocketMQResponse:
        assert message.headers["who"] == "ada"
        return RocketMQResponse(f"pong {body}", headers={"served-by": "echo"})

    publisher = broker.publisher("echo", tags="ping", headers={"who": "ada"})
    async with TestRocketMQBroker(broker):
        reply = await publisher.request("x")
        assert await reply.decode() == "pong x"  # the content type came back: text, not bytes
        assert reply.headers["served-by"] == "echo"
        with pytest.raises(SubscriberNotFound):  # the tag selects no subscriber
            await publisher.request("x", tags="other")


async def test_a_request_nobody_answers_is_a_typed_timeout() -> None:
    broker = RocketMQBroker("127.0.0.1:9876")
    never = anyio.Event()

    @broker.subscriber("quiet", group="quiet", no_reply=True)
    async def quiet(body: str) -> str:
        return "unsent"

    @broker.subscriber("slow", group="slow")
    async def slow(body: str) -> str:
        await never.wait()
        return "late"

    async with TestRocketMQBroker(broker) as br:
        with pytest.raises(RequestTimeoutError) as caught:
            await br.request("x", "quiet", timeout=1)
        error = caught.value
        assert isinstance(error, TimeoutError)  # what FastStream's brokers raise
        assert isinstance(error, ReplyTimeout) and isinstance(error, RocketMQError)
        assert error.topic == "quiet" and error.correlation_id
        quiet.mock.assert_called_once_with("x")
        with pytest.raises(TimeoutError):
            await br.request("x", "slow", timeout=0.05)
        with pytest.raises(SubscriberNotFound):
            await br.request("x", "nobody")


async def test_a_handlers_failure_is_raised_from_request() -> None:
    broker = RocketMQBroker("127.0.0.1:9876")

    @broker.subscriber("fails", group="g")
    async def fails(body: str) -> str:
        raise ValueError("no")

    async with TestRocketMQBroker(broker) as br:
        with pytest.raises(ValueError, match="no"):
            await br.request("x", "fails")


async def test_a_publishers_reply_to_reaches_the_message_and_the_answer_that_topic() -> None:
    broker = RocketMQBroker("127.0.0.1:9876")

    @broker.subscriber("questions", group="answerer")
    async def answer(question: str, message: RocketMQMessage) -> str:
        return f"re: {question} ({message.reply_to})"

    @broker.subscriber("answers", group="asker")
    async def answers(text: str) -> None: ...

    @broker.subscriber("elsewhere", group="other")
    async def elsewhere(text: str) -> None: ...

    @broker.subscriber("inbox", group="relay")
    @broker.publisher("questions", reply_to="answers")  # a handler's result carries it too
    async def relay(body: str) -> str:
        return body

    asking = broker.publisher("questions", reply_to="answers")
    async with TestRocketMQBroker(broker) as br:
        await asking.publish("why")
        answers.mock.assert_called_once_with("re: why (answers)")
        await asking.publish("how", reply_to="elsewhere")  # the call's own wins
        elsewhere.mock.assert_called_once_with("re: how (elsewhere)")
        await br.publish("when", "inbox")
        answers.mock.assert_called_with("re: when (answers)")
        assert answers.mock.call_count == 2
    with pytest.raises(ConfigError):
        broker.publisher("questions", reply_to="bad topic!")


async def test_reply_to_goes_through_the_fastapi_router_too() -> None:
    from rocketmq_actors.faststream.fastapi import RocketMQRouter

    router = RocketMQRouter("127.0.0.1:9876")
    got: list[Any] = []

    @router.subscriber("q", group="a")
    async def answer(body: str) -> str:
        return body.upper()

    @router.subscriber("r", group="b")
    async def result(body: str) -> None:
        got.append(body)

    publisher = router.publisher("q", reply_to="r")
    async with TestRocketMQBroker(router.broker):
        await publisher.publish("x")
    assert got == ["X"]


async def test_a_reply_the_broker_cannot_push_is_logged_not_reconsumed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The requester is gone: the broker refuses the reply. Consuming the request again would
    not reach it either: the publish of the reply returns (logged); ACL refusals still raise."""
    from faststream.response.publish_type import PublishType
    from structlog.testing import capture_logs

    from rocketmq_actors.errors import AccessDenied, BrokerError
    from rocketmq_actors.faststream import producer as fast_producer
    from rocketmq_actors.faststream.response import RocketMQPublishCommand
    from rocketmq_actors.faststream.testing import fake_received
    from rocketmq_actors.producer import Message
    from rocketmq_actors.protocol.codes import ResponseCode

    refusal: list[BrokerError] = [BrokerError("b:10911", ResponseCode.SYSTEM_ERROR, "no channel")]

    async def refused(*args: Any, **kwargs: Any) -> None:
        raise refusal[0]

    monkeypatch.setattr(fast_producer, "send_reply", refused)
    sender = fast_producer.RocketMQFastProducer()
    sender.producer = object()  # type: ignore[assignment]  # (send_reply is the fake)
    cmd = RocketMQPublishCommand("late", _publish_type=PublishType.REPLY)
    cmd.answers = fake_received(Message(topic="rpc", body=b"x"))
    with capture_logs() as logs:
        assert await sender.publish(cmd) is None
    assert [e["event"] for e in logs] == ["faststream.reply.undeliverable"]
    refusal[0] = AccessDenied("b:10911", ResponseCode.NO_PERMISSION, "denied")
    with pytest.raises(AccessDenied):
        await sender.publish(cmd)
