"""The FastStream broker in memory (TestRocketMQBroker): round trip, typed decoding, ack /
nack / reject as settlement, selectors and groups, middlewares, routers, lifespan, AsyncAPI."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any, ClassVar

import anyio
import pytest
from faststream import BaseMiddleware, FastStream
from faststream.exceptions import AckMessage, NackMessage, RejectMessage
from faststream.middlewares import AckPolicy
from faststream.specification import AsyncAPI
from pydantic import BaseModel

from rocketmq_actors.cluster.options import ClientOptions
from rocketmq_actors.consumer.core.options import MessageModel
from rocketmq_actors.consumer.core.settlement import DelayLevel, Outcome
from rocketmq_actors.errors import ConfigError, InvalidMessage
from rocketmq_actors.faststream import (
    RocketMQBroker,
    RocketMQMessage,
    RocketMQResponse,
    RocketMQRoute,
    RocketMQRoutePublisher,
    RocketMQRouter,
    TestRocketMQBroker,
)
from rocketmq_actors.protocol.codes import RequestCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.protocol.trace import RMQ_SYS_TRACE_TOPIC, PubRecord, decode_records
from rocketmq_actors.testing.fakeserver import FakePeer, FakeServer

from ..trace.test_dispatcher import FakeCluster


class Order(BaseModel):
    order_id: str
    amount_cents: int


def outcomes(test: TestRocketMQBroker) -> list[tuple[str, Outcome, Any]]:
    return [(s.group, s.outcome, s.delay) for s in test.settled]


async def test_publish_reaches_a_typed_handler_and_its_result_the_publisher() -> None:
    broker = RocketMQBroker("127.0.0.1:9876")
    seen: list[Order] = []

    @broker.subscriber("orders", group="billing")
    @broker.publisher("receipts")
    async def bill(order: Order, message: RocketMQMessage) -> dict[str, Any]:
        seen.append(order)
        assert message.raw_message.tags == "paid" and message.raw_message.keys == ["o-1"]
        return {"order_id": order.order_id, "billed": True}

    @broker.subscriber("receipts", group="mail")
    async def mail(receipt: dict[str, Any]) -> None: ...

    async with TestRocketMQBroker(broker) as br:
        await br.publish(Order(order_id="o-1", amount_cents=5), "orders", tags="paid", keys="o-1")
        assert seen == [Order(order_id="o-1", amount_cents=5)]
        bill.mock.assert_called_once_with({"order_id": "o-1", "amount_cents": 5})
        mail.mock.assert_called_once_with({"order_id": "o-1", "billed": True})


async def test_a_body_that_is_not_the_model_is_nacked_and_raised() -> None:
    broker = RocketMQBroker("127.0.0.1:9876")

    @broker.subscriber("orders", group="billing")
    async def bill(order: Order) -> None: ...

    async with (test := TestRocketMQBroker(broker, connect_only=False)) as br:
        with pytest.raises(Exception, match="validation error"):
            await br.publish({"order_id": "o-1"}, "orders")
        assert outcomes(test) == [("billing", Outcome.NACK, None)]


@pytest.mark.parametrize(
    ("raise_", "policy", "expected"),
    [
        (None, AckPolicy.NACK_ON_ERROR, (Outcome.ACK, None)),
        (ValueError("boom"), AckPolicy.NACK_ON_ERROR, (Outcome.NACK, None)),
        (ValueError("boom"), AckPolicy.REJECT_ON_ERROR, (Outcome.DEAD, None)),
        (ValueError("boom"), AckPolicy.ACK, (Outcome.ACK, None)),
        (ValueError("boom"), AckPolicy.MANUAL, (Outcome.NACK, None)),
        (NackMessage(delay=30), AckPolicy.NACK_ON_ERROR, (Outcome.NACK, 30)),
        (NackMessage(delay=DelayLevel(3)), AckPolicy.ACK, (Outcome.NACK, DelayLevel(3))),
        (RejectMessage(), AckPolicy.NACK_ON_ERROR, (Outcome.DEAD, None)),
        (AckMessage(), AckPolicy.REJECT_ON_ERROR, (Outcome.ACK, None)),
    ],
)
async def test_ack_policies_and_handler_exceptions_settle_the_delivery(
    raise_: Exception | None, policy: AckPolicy, expected: tuple[Outcome, Any]
) -> None:
    broker = RocketMQBroker("127.0.0.1:9876")

    @broker.subscriber("orders", group="billing", ack_policy=policy)
    async def bill(body: str) -> None:
        if raise_ is not None:
            raise raise_

    async with (test := TestRocketMQBroker(broker, connect_only=False)) as br:
        if isinstance(raise_, ValueError):
            with pytest.raises(ValueError, match="boom"):
                await br.publish("x", "orders")
        else:
            await br.publish("x", "orders")
        assert outcomes(test) == [("billing", *expected)]


async def test_manual_settlement_from_the_message() -> None:
    broker = RocketMQBroker("127.0.0.1:9876")

    @broker.subscriber("orders", group="billing", ack_policy=AckPolicy.MANUAL)
    async def bill(body: str, message: RocketMQMessage) -> None:
        if body == "later":
            await message.nack(delay=timedelta(minutes=1))
        elif body == "dead":
            await message.reject()
        else:
            await message.ack()
        await message.ack()  # settled already: a no-op, as FastStream's other brokers

    async with (test := TestRocketMQBroker(broker, connect_only=False)) as br:
        for body in ("later", "dead", "fine"):
            await br.publish(body, "orders")
        assert outcomes(test) == [
            ("billing", Outcome.NACK, timedelta(minutes=1)),
            ("billing", Outcome.DEAD, None),
            ("billing", Outcome.ACK, None),
        ]


async def test_tags_select_and_each_group_gets_one_copy() -> None:
    broker = RocketMQBroker("127.0.0.1:9876")

    @broker.subscriber("orders", group="paid", tags="paid || refunded")
    async def paid(body: str) -> None: ...

    @broker.subscriber("orders", group="audit")
    async def audit(body: str) -> None: ...

    @broker.subscriber("orders", group="audit")
    async def audit_twin(body: str) -> None: ...

    @broker.subscriber("orders", group="cache", model=MessageModel.BROADCASTING)
    async def cache_a(body: str) -> None: ...

    @broker.subscriber("orders", group="cache", model=MessageModel.BROADCASTING)
    async def cache_b(body: str) -> None: ...

    async with TestRocketMQBroker(broker) as br:
        await br.publish("a", "orders", tags="paid")
        await br.publish("b", "orders", tags="created")
        assert paid.mock.call_count == 1
        assert audit.mock.call_count + audit_twin.mock.call_count == 2
        assert cache_a.mock.call_count == 2 and cache_b.mock.call_count == 2


async def test_response_fields_and_publisher_defaults_reach_the_message() -> None:
    broker = RocketMQBroker("127.0.0.1:9876")
    received: list[RocketMQMessage] = []

    @broker.subscriber("orders", group="billing")
    @broker.publisher("receipts", tags="receipt", headers={"source": "billing"})
    async def bill(body: str) -> RocketMQResponse:
        return RocketMQResponse(body.upper(), keys=["k1", "k2"], headers={"extra": "1"})

    @broker.subscriber("receipts", group="mail")
    async def mail(body: str, message: RocketMQMessage) -> None:
        received.append(message)

    async with TestRocketMQBroker(broker) as br:
        await br.publish("hi", "orders", headers={"trace": "t-1"}, correlation_id="c-1")
        (message,) = received
        assert message.raw_message.tags == "receipt" and message.raw_message.keys == ["k1", "k2"]
        assert message.headers["source"] == "billing" and message.headers["extra"] == "1"
        assert message.correlation_id == "c-1"  # carried from the request to the result
        assert "TAGS" not in message.headers  # the client's own properties are not headers
        mail.mock.assert_called_once_with("HI")


async def test_publish_delay_is_a_delay_level() -> None:
    broker = RocketMQBroker("127.0.0.1:9876")
    delays: list[str | None] = []

    @broker.subscriber("later", group="g")
    async def later(body: str, message: RocketMQMessage) -> None:
        delays.append(message.raw_message.properties.get("DELAY"))

    async with TestRocketMQBroker(broker) as br:
        await br.publish("x", "later", delay=10)
        await br.publish("x", "later", delay=DelayLevel(2))
        with pytest.raises(ConfigError, match="delay"):
            await br.publish("x", "later", delay=3 * 3600)
        assert delays == ["3", "2"]


async def test_bad_input_raises_typed_errors_before_any_io() -> None:
    broker = RocketMQBroker("127.0.0.1:9876")
    with pytest.raises(ConfigError, match="tags or sql"):
        broker.subscriber("orders", group="g", tags="a", sql="a > 1")
    with pytest.raises(ConfigError):
        broker.subscriber("bad topic!", group="g")
    with pytest.raises(ConfigError, match="group"):
        broker.subscriber("orders", group="")
    with pytest.raises(ConfigError, match="consumer_options"):
        broker.subscriber("orders", group="g", consumer_options={"group": "x"})
    with pytest.raises(ConfigError, match="no \\['concurency'\\]"):
        broker.subscriber("orders", group="g", consumer_options={"concurency": 2})
    with pytest.raises(ConfigError, match="consume_from"):
        broker.subscriber("orders", group="g", consumer_options={"consume_from": "NEWEST"})
    with pytest.raises(ConfigError, match="client_options"):
        RocketMQBroker("127.0.0.1:9876", client_options={"bogus": 1})
    with pytest.raises(ConfigError, match="producer_options must be a ProducerOptions"):
        RocketMQBroker("127.0.0.1:9876", producer_options={"retry_times": 1})  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="producer_client must be a ClientOptions"):
        RocketMQBroker("127.0.0.1:9876", producer_client={"trace": True})  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="producer_client may not set \\['namespace'\\]"):
        RocketMQBroker("127.0.0.1:9876", producer_client=ClientOptions(namespace="ns"))
    with pytest.raises(ConfigError, match="group"):
        RocketMQBroker("127.0.0.1:9876", producer_group="bad group!")
    with pytest.raises(ConfigError, match="ClientInstance"):
        broker.subscriber("orders", group="g", consumer_options={"credentials": None})

    @broker.subscriber("orders", group="g")
    async def handle(body: str) -> None: ...

    async with TestRocketMQBroker(broker) as br:
        with pytest.raises(InvalidMessage, match="reserved"):
            await br.publish("x", "orders", headers={"TAGS": "forged"})


class Sends(FakeCluster):
    """The fake cluster, keeping (group, topic) of each user send as the wire carried it."""

    def __init__(self) -> None:
        super().__init__(stall_trace=False)
        self.sends: list[tuple[str, str]] = []

    async def __call__(self, peer: FakePeer, cmd: RemotingCommand) -> None:
        if cmd.code == RequestCode.SEND_MESSAGE_V2 and cmd.ext_fields["b"] != RMQ_SYS_TRACE_TOPIC:
            self.sends.append((cmd.ext_fields["a"], cmd.ext_fields["b"]))
        await super().__call__(peer, cmd)


async def test_the_producer_client_options_reach_the_brokers_producer() -> None:
    """``producer_client=ClientOptions(trace=True)``: what the broker publishes goes out under
    the broker's namespace and leaves a trace record (which names topic and group without it,
    as Java's does)."""
    fake = Sends()
    async with FakeServer(fake) as server:
        fake.addr = server.addr
        broker = RocketMQBroker(
            server.addr, producer_group="PF", namespace="ns",
            producer_client=ClientOptions(trace=True, shutdown_timeout=2.0),
        )  # fmt: skip
        async with broker:
            await broker.start()
            await broker.publish("hello", "orders")
            with anyio.fail_after(5):
                await fake.trace_arrived.wait()
    assert fake.sends == [("ns%PF", "ns%orders")]
    (pub,) = decode_records(fake.traces[0].body)
    assert isinstance(pub, PubRecord)
    assert (pub.group, pub.topic, pub.body_length) == ("PF", "orders", 5)


class Recording(BaseMiddleware):
    events: ClassVar[list[str]] = []

    async def consume_scope(self, call_next: Callable[[Any], Awaitable[Any]], msg: Any) -> Any:
        Recording.events.append(f"consume {msg.body!r}")
        return await call_next(msg)

    async def publish_scope(self, call_next: Callable[[Any], Awaitable[Any]], cmd: Any) -> Any:
        Recording.events.append(f"publish {cmd.destination}")
        return await call_next(cmd)


async def test_middlewares_see_consumes_and_publishes() -> None:
    Recording.events = []
    broker = RocketMQBroker("127.0.0.1:9876", middlewares=[Recording])

    @broker.subscriber("orders", group="g")
    @broker.publisher("receipts")
    async def handle(body: str) -> str:
        return body

    async with TestRocketMQBroker(broker) as br:
        await br.publish("x", "orders")
    assert Recording.events[:2] == ["publish orders", "consume b'x'"]
    assert "publish receipts" in Recording.events


async def test_router_prefix_and_routes() -> None:
    async def route_handler(body: str) -> str:
        return body + "!"

    router = RocketMQRouter(
        "eu_",
        handlers=[
            RocketMQRoute(route_handler, "orders", group="eu_billing",
                          publishers=[RocketMQRoutePublisher("receipts")]),
        ],
    )  # fmt: skip

    @router.subscriber("receipts", group="eu_mail")
    async def mail(body: str) -> None: ...

    broker = RocketMQBroker("127.0.0.1:9876")
    broker.include_router(router)
    async with TestRocketMQBroker(broker) as br:
        await br.publish("x", "eu_orders")
        mail.mock.assert_called_once_with("x!")
    with pytest.raises(ConfigError, match="RocketMQ routers"):
        broker.include_router(object())  # type: ignore[arg-type]


async def test_lifespan_of_a_faststream_app() -> None:
    broker = RocketMQBroker("127.0.0.1:9876")
    app = FastStream(broker)
    calls: list[str] = []

    @app.after_startup
    async def ready() -> None:
        calls.append("started")
        await broker.publish("x", "orders")

    @broker.subscriber("orders", group="g")
    async def handle(body: str) -> None:
        calls.append(body)

    from faststream import TestApp

    async with TestRocketMQBroker(broker), TestApp(app):
        assert calls == ["started", "x"]


def test_asyncapi_names_topic_group_and_selector() -> None:
    broker = RocketMQBroker("127.0.0.1:9876", description="orders service")

    @broker.subscriber("orders", group="billing", tags="paid", orderly=True)
    @broker.publisher("receipts", tags="receipt")
    async def bill(order: Order) -> Order:
        return order

    schema = AsyncAPI(broker, schema_version="3.0.0").to_specification().to_jsonable()
    assert schema["servers"]["development"]["protocol"] == "rocketmq"
    assert schema["servers"]["development"]["host"] == "127.0.0.1:9876"
    channels = schema["channels"]
    sub = channels["orders:Bill"]
    assert sub["address"] == "orders"
    assert "consumer group billing" in sub["description"]
    assert "TAG paid" in sub["description"] and "orderly" in sub["description"]
    assert channels["receipts:Publisher"]["description"] == "RocketMQ topic receipts, tags receipt"
    assert "Order" in schema["components"]["schemas"]


async def test_a_result_goes_to_the_reply_to_topic_unless_no_reply() -> None:
    broker = RocketMQBroker("127.0.0.1:9876")

    @broker.subscriber("questions", group="answerer")
    async def answer(question: str) -> str:
        return f"re: {question}"

    @broker.subscriber("quiet", group="quiet", no_reply=True)
    async def quiet(question: str) -> str:
        return "unsent"

    @broker.subscriber("answers", group="asker")
    async def answers(text: str, message: RocketMQMessage) -> None:
        assert message.correlation_id == "q-1"

    async with TestRocketMQBroker(broker) as br:
        await br.publish("why", "questions", reply_to="answers", correlation_id="q-1")
        await br.publish("why", "quiet", reply_to="answers", correlation_id="q-1")
        answers.mock.assert_called_once_with("re: why")


async def test_without_a_nameserver_connect_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NAMESRV_ADDR", raising=False)
    broker = RocketMQBroker()
    with pytest.raises(ConfigError, match="NAMESRV_ADDR"):
        await broker.connect()
    assert broker.producer is None
