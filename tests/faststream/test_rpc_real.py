"""FastStream's request/response and ``reply_to`` against the session cluster: the request
goes by RocketMQ's request-reply protocol (the broker pushes the reply to the requesting
client), a plain ``Producer.request`` is answered by a FastStream handler too, a request with
no responder times out with the typed error, and a publisher's ``reply_to`` delivers the
handler's value to that topic."""

from __future__ import annotations

import json

import anyio
import pytest

from rocketmq_actors.consumer.push import ConsumeFrom
from rocketmq_actors.errors import ReplyTimeout
from rocketmq_actors.faststream import (
    RequestTimeoutError,
    RocketMQBroker,
    RocketMQMessage,
    RocketMQReplyMessage,
)
from rocketmq_actors.producer import Message

from .test_broker_real import Collected, make_topics

pytestmark = [pytest.mark.integration, pytest.mark.once]

FIRST = {"consume_from": ConsumeFrom.FIRST_OFFSET}


async def test_request_is_answered_by_a_subscribers_return_value(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    await make_topics(rocketmq_namesrv, unique_topic)
    broker = RocketMQBroker(rocketmq_namesrv)

    @broker.subscriber(unique_topic, group=unique_group, consumer_options=FIRST)
    async def add(body: dict[str, int], message: RocketMQMessage) -> dict[str, int]:
        assert message.reply_to.endswith("_REPLY_TOPIC")  # <CLUSTER>_REPLY_TOPIC
        return {"sum": body["a"] + body["b"]}

    publisher = broker.publisher(unique_topic)
    async with broker:
        await broker.start()
        reply = await broker.request({"a": 2, "b": 3}, unique_topic, correlation_id="c-7",
                                     timeout=30)  # fmt: skip
        assert isinstance(reply, RocketMQReplyMessage)
        assert await reply.decode() == {"sum": 5}
        assert reply.correlation_id == "c-7"
        assert (await (await publisher.request({"a": 1, "b": 1}, timeout=30)).decode()) == {
            "sum": 2
        }
        # the client's own request (or a Java client's) is answered the same way
        producer = broker.producer
        assert producer is not None
        plain = await producer.request(
            Message(topic=unique_topic, body=b'{"a": 4, "b": 4}'), timeout=30
        )
        assert json.loads(plain.body) == {"sum": 8}
        assert plain.properties["content-type"] == "application/json"


async def test_a_request_without_a_responder_times_out(
    rocketmq_namesrv: str, unique_topic: str
) -> None:
    await make_topics(rocketmq_namesrv, unique_topic)
    broker = RocketMQBroker(rocketmq_namesrv)
    async with broker:
        await broker.start()
        with anyio.fail_after(30), pytest.raises(RequestTimeoutError) as caught:
            await broker.request("anyone?", unique_topic, timeout=2)
    error = caught.value
    assert isinstance(error, TimeoutError) and isinstance(error, ReplyTimeout)
    assert error.topic == unique_topic and error.sent


async def test_a_publishers_reply_to_delivers_the_answer_to_that_topic(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    answers = f"{unique_topic}_answers"
    await make_topics(rocketmq_namesrv, unique_topic, answers)
    broker = RocketMQBroker(rocketmq_namesrv)
    got = Collected()

    @broker.subscriber(unique_topic, group=unique_group, consumer_options=FIRST)
    async def answer(question: str, message: RocketMQMessage) -> str:
        return f"re: {question} via {message.reply_to}"

    @broker.subscriber(answers, group=f"{unique_group}_asker", consumer_options=FIRST)
    async def asker(text: str, message: RocketMQMessage) -> None:
        got.add((text, message.correlation_id))

    asking = broker.publisher(unique_topic, reply_to=answers)
    async with broker:
        await broker.start()
        await asking.publish("why", correlation_id="q-1")
        (item,) = await got.wait(1)
    assert item == (f"re: why via {answers}", "q-1")
