"""``TestRocketMQBroker``: FastStream's in-memory test broker for RocketMQ.

    async with TestRocketMQBroker(broker) as br:
        await br.publish({"id": 1}, "orders", tags="paid")
        bill.mock.assert_called_once_with({"id": 1})

A publish is delivered at once, in the publishing task, to the subscribers of its topic whose
tag expression matches (a SQL92 selector is not evaluated in memory: it matches everything),
once per consumer group (every subscriber of a broadcasting group gets it). The message is a
:class:`~rocketmq_actors.consumer.message.ReceivedMessage` as a broker would deliver it (user
properties, tags, keys, a unique id), built from the same :class:`Message` the real producer
would send (so bad fields raise the same typed errors). How each delivery was settled (ack,
nack and its delay, reject) is recorded in :attr:`TestRocketMQBroker.settled`; nothing is
consumed again in memory. A handler's exception is raised from ``publish``, as FastStream's
other test brokers do. ``request`` delivers the message as a RocketMQ request (with the
properties a broker would have stored) and returns the first subscriber's reply
(``SubscriberNotFound`` when no subscriber matches, :class:`~.rpc.RequestTimeoutError` when
none answered, ``no_reply=True``, or the handlers outlast the timeout). ``with_real=True``
runs the same test against a real cluster.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from unittest.mock import MagicMock

import anyio
import attrs
from faststream._internal.testing.broker import TestBroker, change_producer
from faststream.exceptions import SubscriberNotFound

from rocketmq_actors.consumer.core.message import ReceivedMessage
from rocketmq_actors.consumer.core.options import MessageModel
from rocketmq_actors.consumer.core.settlement import Delay, Outcome, Settlement
from rocketmq_actors.consumer.core.subscriptions import Subscription
from rocketmq_actors.producer.prepare import prepare
from rocketmq_actors.producer.requestreply import request_properties
from rocketmq_actors.protocol.events import ReplyMessage
from rocketmq_actors.protocol.messages import (
    MAX_MESSAGE_SIZE,
    Message,
    Property,
    UniqueIdGenerator,
    encode_properties,
)

from .broker import RocketMQBroker
from .producer import DEFAULT_REQUEST_TIMEOUT, RocketMQFastProducer, to_message
from .publisher import RocketMQPublisher
from .response import RocketMQPublishCommand
from .rpc import RequestTimeoutError, memory_reply
from .subscriber import RocketMQSubscriber

__all__ = ["Settled", "TestRocketMQBroker", "fake_received"]

_IDS = UniqueIdGenerator()


@dataclass(frozen=True)
class Settled:
    """How one in-memory delivery ended."""

    topic: str
    group: str
    msg_id: str
    outcome: Outcome
    delay: Delay | None


#: the cluster name in-memory requests carry (a real broker adds its own)
MEMORY_CLUSTER = "memory"


def fake_received(
    message: Message, *, reconsume_times: int = 0, extra: dict[str, str] | None = None
) -> ReceivedMessage[Any]:
    """The record a broker would deliver for ``message``, checked and given its unique id by
    the producer's own :func:`~rocketmq_actors.producer.prepare.prepare` (the same typed
    errors as a real send); ``extra``: properties the client or the broker adds."""
    prepared = prepare(message, ids=_IDS, namespace=None, max_size=MAX_MESSAGE_SIZE,
                       compress_threshold=0, compress_level=0)  # fmt: skip
    assert isinstance(prepared.body, bytes)
    properties = prepared.properties
    if extra:
        properties += encode_properties(extra)
    now = int(time.time() * 1000)
    return ReceivedMessage(
        topic=message.topic, body=prepared.body, raw_properties=properties.encode(),
        queue_id=0, queue_offset=0, commit_log_offset=0, sys_flag=0, flag=message.flag,
        born_timestamp=now, born_ip=b"\x7f\x00\x00\x01", born_port=0, store_timestamp=now,
        store_ip=b"\x7f\x00\x00\x01", store_port=0, reconsume_times=reconsume_times,
        prepared_transaction_offset=0, body_crc=0, broker_name="memory",
    )  # fmt: skip


class TestRocketMQBroker(TestBroker[RocketMQBroker], broker=RocketMQBroker):
    """FastStream's test broker for :class:`RocketMQBroker` (in memory unless ``with_real``)."""

    def __init__(
        self, broker: RocketMQBroker, /, *, with_real: bool = False,
        connect_only: bool | None = None,
    ) -> None:  # fmt: skip
        super().__init__(broker, with_real=with_real, connect_only=connect_only)
        #: every in-memory delivery's settlement, in order
        self.settled: list[Settled] = []

    def create_publisher_fake_subscriber(
        self, broker: RocketMQBroker, publisher: RocketMQPublisher
    ) -> tuple[RocketMQSubscriber, bool]:
        for sub in subscribers_of(broker):
            if sub.topic == publisher.topic:
                return sub, True
        group = f"faststream-test-{uuid.uuid4().hex[:12]}"
        return broker.subscriber(publisher.topic, group=group, persistent=False), False

    @contextmanager
    def _patch_producer(self, broker: RocketMQBroker) -> Generator[None, None, None]:
        with change_producer(broker.config.broker_config, MemoryProducer(broker, self)):
            yield

    async def _fake_connect(self, broker: RocketMQBroker, *args: Any, **kwargs: Any) -> Any:
        return MagicMock()


def subscribers_of(broker: RocketMQBroker) -> Iterator[RocketMQSubscriber]:
    for sub in broker.subscribers:
        if isinstance(sub, RocketMQSubscriber):
            yield sub


class MemoryProducer(RocketMQFastProducer):
    """Delivers each publish to the matching subscribers, in the publishing task."""

    def __init__(self, broker: RocketMQBroker, test: TestRocketMQBroker) -> None:
        super().__init__(parser=broker._parser, decoder=broker._decoder)
        self.broker, self.test = broker, test
        self.serializer = broker.config.fd_config._serializer
        #: the replies handlers sent, by the request's correlation id, until it returns
        self._replies: dict[str, ReplyMessage] = {}

    def _targets(self, record: ReceivedMessage[Any]) -> list[RocketMQSubscriber]:
        targets, groups = [], set()
        for sub in subscribers_of(self.broker):
            if sub.topic != record.topic:
                continue
            if not Subscription.of(sub.topic, sub.channel.selector).matches(record):
                continue
            if sub.channel.model is MessageModel.CLUSTERING:
                if sub.group in groups:
                    continue  # one member of a clustering group consumes it
                groups.add(sub.group)
            targets.append(sub)
        return targets

    async def publish(self, cmd: RocketMQPublishCommand) -> list[Settled] | None:
        message = await to_message(cmd, self.codec, self.serializer)
        if cmd.answers is not None:  # a handler's reply to a request
            reply = memory_reply(cmd.answers.properties, message)
            self._replies.setdefault(reply.correlation_id, reply)  # the first one wins
            return None
        return await self._deliver(fake_received(message))

    async def _deliver(self, record: ReceivedMessage[Any]) -> list[Settled]:
        done: list[Settled] = []
        for sub in self._targets(record):
            delivery = attrs.evolve(record)  # a copy per group, as each group pulls its own
            settlement = Settlement()
            delivery.settle_with(settlement)
            failed = True
            try:
                await sub.process_message(delivery)
                failed = False
            finally:
                settlement.resolve(Outcome.NACK if failed else Outcome.ACK)
                settlement.close()
                assert settlement.outcome is not None
                done.append(Settled(sub.topic, sub.group, delivery.msg_id,
                                    settlement.outcome, settlement.delay))  # fmt: skip
                self.test.settled.append(done[-1])
        return done

    async def request(self, cmd: RocketMQPublishCommand) -> ReplyMessage:
        """Delivers ``cmd`` as a request (the properties a requester and a broker add) and
        returns the first reply a handler sent."""
        message = await to_message(cmd, self.codec, self.serializer)
        timeout = DEFAULT_REQUEST_TIMEOUT if cmd.timeout is None else cmd.timeout
        correlation_id = str(uuid.uuid4())
        record = fake_received(message, extra={
            **request_properties(correlation_id, "memory@0", timeout),
            Property.CLUSTER: MEMORY_CLUSTER,
        })  # fmt: skip
        if not self._targets(record):
            raise SubscriberNotFound(f"no subscriber of {record.topic!r} selects the request")
        not_sent = RequestTimeoutError(message.topic, correlation_id, timeout)
        try:
            with anyio.fail_after(timeout):
                await self._deliver(record)
        except TimeoutError:
            self._replies.pop(correlation_id, None)
            raise not_sent from None
        reply = self._replies.pop(correlation_id, None)
        if reply is None:
            raise not_sent  # nobody answered: a real requester would wait out its timeout
        return reply
