"""A FastStream subscriber on a RocketMQ topic: one :class:`PushConsumer` of its own group.

Each message the consumer delivers goes through FastStream (middlewares, decoding, the
handler, the publishers of its result). The ack policy decides how the delivery is settled
(:mod:`.message`): by default ``NACK_ON_ERROR``, RocketMQ's own meaning of a failed handler -
reconsume later, then ``%DLQ%<group>`` after ``max_reconsume_times``. A failure no middleware
settled (``AckPolicy.MANUAL``) is reconsumed later too; a handler that returns without
settling is consumed.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
import attrs
from faststream._internal.configs import SubscriberSpecificationConfig, SubscriberUsecaseConfig
from faststream._internal.constants import EMPTY
from faststream._internal.endpoint.publisher.fake import FakePublisher
from faststream._internal.endpoint.subscriber import SubscriberSpecification, SubscriberUsecase
from faststream._internal.endpoint.subscriber.call_item import CallsCollection
from faststream._internal.endpoint.utils import process_msg
from faststream.exceptions import StopConsume
from faststream.middlewares import AckPolicy
from faststream.specification.asyncapi.utils import resolve_payloads
from faststream.specification.schema import Message, Operation, SubscriberSpec

from rocketmq_actors.cluster.options import ClientOptions
from rocketmq_actors.consumer.core.message import ReceivedMessage
from rocketmq_actors.consumer.core.options import ConsumeFrom, MessageModel
from rocketmq_actors.consumer.core.subscriptions import MessageSelector
from rocketmq_actors.consumer.push import PushConsumer, PushOptions
from rocketmq_actors.errors import ClientStateError, ConfigError
from rocketmq_actors.logs import get_logger
from rocketmq_actors.names import validate_group, validate_topic
from rocketmq_actors.protocol.bodies import MessageQueue

from .config import RocketMQBrokerConfig
from .message import RocketMQMessage, RocketMQParser
from .response import RocketMQPublishCommand
from .rpc import is_request

if TYPE_CHECKING:
    from faststream._internal.endpoint.publisher import PublisherProto
    from faststream.message import StreamMessage
    from faststream.response.response import PublishCommand

__all__ = ["RocketMQSubscriber", "create_subscriber", "selector_of"]

log = get_logger("rocketmq_actors.faststream")

#: what consumer_options may name: the fields of PushOptions, those of ClientOptions a consumer on
#: the broker's ClientInstance may set, and the consumer's on_rebalance (their values are
#: checked when the subscriber is created)
PUSH_OPTIONS = frozenset(attrs.fields_dict(PushOptions))
CLIENT_OPTIONS = frozenset(
    {"request_timeout", "shutdown_timeout", "tracing", "trace", "trace_topic", "on_error"}
)


def selector_of(tags: str | None, sql: str | None) -> MessageSelector:
    """The subscription's selector: ``tags`` (default ``*``) or a SQL92 ``sql``, not both."""
    if tags is not None and sql is not None:
        raise ConfigError("give tags or sql, not both")
    if sql is not None:
        return MessageSelector.by_sql(sql)
    if tags is not None and not isinstance(tags, str):
        raise ConfigError(f"tags must be an expression such as 'a || b', not {tags!r}")
    return MessageSelector.by_tag(tags or "*")


def with_consume_from(options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` with ``consume_from`` given by name (``"FIRST_OFFSET"``) made the enum."""
    result = dict(options)
    start = result.get("consume_from")
    if isinstance(start, str):
        try:
            result["consume_from"] = ConsumeFrom[start.upper()]
        except KeyError:
            names = ", ".join(c.name for c in ConsumeFrom)
            raise ConfigError(f"consume_from must be one of {names}, not {start!r}") from None
    return result


@dataclass(kw_only=True)
class Channel:
    """What a subscriber consumes: the AsyncAPI channel and the consumer's subscription."""

    topic: str
    group: str
    selector: MessageSelector
    orderly: bool = False
    model: MessageModel = MessageModel.CLUSTERING

    def describe(self) -> str:
        kind = "orderly" if self.orderly else "concurrent"
        return (
            f"RocketMQ topic {self.topic}, consumer group {self.group}, "
            f"{self.selector.expression_type} {self.selector.expression}, "
            f"{self.model.name.lower()}, {kind}"
        )


@dataclass(kw_only=True)
class RocketMQSubscriberSpecificationConfig(SubscriberSpecificationConfig):
    channel: Channel


@dataclass(kw_only=True)
class RocketMQSubscriberConfig(SubscriberUsecaseConfig):
    _outer_config: RocketMQBrokerConfig = field(default_factory=RocketMQBrokerConfig)
    channel: Channel
    options: PushOptions = field(default_factory=PushOptions)
    client: ClientOptions = field(default_factory=ClientOptions)
    on_rebalance: Callable[[list[MessageQueue]], None] | None = None

    @property
    def ack_policy(self) -> AckPolicy:
        if self._ack_policy is not EMPTY:
            return self._ack_policy
        if self._outer_config.ack_policy is not EMPTY:
            return self._outer_config.ack_policy
        return AckPolicy.NACK_ON_ERROR


class RocketMQSubscriberSpecification(
    SubscriberSpecification[RocketMQBrokerConfig, RocketMQSubscriberSpecificationConfig]
):
    __slots__ = ()

    @property
    def topic(self) -> str:
        return f"{self._outer_config.prefix}{self.config.channel.topic}"

    @property
    def channel_labels(self) -> list[str]:
        return [self.topic]

    @property
    def name(self) -> str:
        return self.config.title_ or f"{self.topic}:{self.call_name}"

    def get_schema(self) -> dict[str, SubscriberSpec]:
        channel = self.config.channel
        facts = Channel(topic=self.topic, group=channel.group, selector=channel.selector,
                        orderly=channel.orderly, model=channel.model).describe()  # fmt: skip
        description = f"{self.description}\n\n{facts}" if self.description else facts
        return {
            self.name: SubscriberSpec(
                address=self.topic,
                description=description,
                operation=Operation(
                    message=Message(
                        title=f"{self.name}:Message",
                        payload=resolve_payloads(self.get_payloads()),
                    ),
                    bindings=None,
                ),
                bindings=None,
            )
        }


class ReplyPublisher(FakePublisher):
    """Publishes a handler's result to the message's ``reply_to`` topic; a request's (a
    message :func:`.rpc.is_request`) goes back to its requester as RocketMQ's reply."""

    __slots__ = ("answers", "topic")

    def __init__(self, producer: Any, topic: str, answers: ReceivedMessage[Any] | None) -> None:
        super().__init__(producer=producer)
        self.topic, self.answers = topic, answers

    def patch_command(self, cmd: PublishCommand) -> RocketMQPublishCommand:
        cmd = super().patch_command(cmd)
        real = RocketMQPublishCommand.from_cmd(cmd)
        real.destination = self.topic
        real.answers = self.answers
        return real


class RocketMQSubscriber(SubscriberUsecase[ReceivedMessage[Any]]):
    """Consumes one topic (with a tag or SQL92 selector) as one consumer group."""

    __slots__ = ("_stopping", "channel", "client", "consumer", "on_rebalance", "options")

    _outer_config: RocketMQBrokerConfig

    def __init__(
        self,
        config: RocketMQSubscriberConfig,
        specification: SubscriberSpecification[Any, Any],
        calls: CallsCollection[ReceivedMessage[Any]],
    ) -> None:
        parser = RocketMQParser(config.channel.group)
        config.parser = parser.parse_message
        config.decoder = parser.decode_message
        super().__init__(config, specification, calls)
        self.channel = config.channel
        self.options, self.client = config.options, config.client
        self.on_rebalance = config.on_rebalance
        self.consumer: PushConsumer[bytes] | None = None
        self._stopping: set[asyncio.Task[None]] = set()

    @property
    def topic(self) -> str:
        return f"{self._outer_config.prefix}{self.channel.topic}"

    @property
    def group(self) -> str:
        return self.channel.group

    def _build_consumer(self, handler: Any) -> PushConsumer[bytes]:
        instance = self._outer_config.instance
        if instance is None:
            raise ClientStateError("the RocketMQ broker is not connected: start it first")
        return PushConsumer(
            group=self.group,
            subscriptions={self.topic: self.channel.selector},
            handler=handler,
            on_rebalance=self.on_rebalance,
            options=self.options,
            client=self.client.evolve(namespace=self._outer_config.namespace),
            instance=instance,  # the broker's: one set of connections for all its clients
        )

    async def start(self) -> None:
        await super().start()
        self._post_start()  # running before the consumer can deliver its first message
        if self.calls:
            self.consumer = self._build_consumer(self._deliver)
            try:
                await self.consumer.start()
            except BaseException:
                self.running, self.consumer = False, None
                raise

    async def stop(self) -> None:
        self.running = False
        consumer, self.consumer = self.consumer, None
        if consumer is not None:
            await consumer.stop()  # waits for the handlers in flight, persists offsets
        # a stop a handler's StopConsume began (never this one itself): finished before this
        if others := [t for t in self._stopping if t is not asyncio.current_task()]:
            await asyncio.gather(*others, return_exceptions=True)
        await super().stop()

    async def _deliver(self, raw: ReceivedMessage[Any]) -> None:
        """The push consumer's handler: one message through FastStream."""
        if not self.running:
            raw.nack()  # stopping: consumed again (by this member after a restart or another)
            return
        try:
            await self.process_message(raw)
        except StopConsume:
            # FastStream's consume() stops the subscriber here; ours cannot wait for its own
            # consumer's stop inside that consumer's handler, so the stop runs beside it (held
            # in _stopping: the broker's stop waits for it, its failure is logged)
            self.running = False
            if not raw.settled:
                raw.nack()  # not consumed: this group consumes it again once it runs again
            task = asyncio.get_running_loop().create_task(self.stop())
            self._stopping.add(task)
            task.add_done_callback(self._stopped)
        except Exception:  # logged by FastStream's middlewares; unsettled: consume it again
            if not raw.settled:
                raw.nack()

    def _stopped(self, task: asyncio.Task[None]) -> None:
        self._stopping.discard(task)
        if not task.cancelled() and (exc := task.exception()) is not None:
            log.warning("faststream.subscriber.stop_failed", topic=self.topic, group=self.group,
                        error=repr(exc))  # fmt: skip

    def _make_response_publisher(self, message: StreamMessage[Any]) -> Iterable[PublisherProto]:
        raw = message.raw_message
        request = raw if is_request(raw.properties) else None
        return (ReplyPublisher(self._outer_config.producer, message.reply_to, request),)

    def get_log_context(self, message: StreamMessage[Any] | None) -> dict[str, str]:
        return {
            "topic": self.topic,
            "group": self.group,
            "message_id": getattr(message, "message_id", ""),
        }

    async def _receiving(self) -> PushConsumer[bytes]:
        if self.calls:
            raise ClientStateError("get_one and async for are for subscribers without handlers")
        if self.consumer is None:
            self.consumer = self._build_consumer(None)
            await self.consumer.start()
        return self.consumer

    async def get_one(self, *, timeout: float = 5.0) -> RocketMQMessage | None:
        consumer = await self._receiving()
        raw: ReceivedMessage[Any] | None = None
        with anyio.move_on_after(timeout):
            raw = await consumer.__anext__()
        return await self._parse(raw)

    async def __aiter__(self) -> AsyncIterator[RocketMQMessage]:
        consumer = await self._receiving()
        async for raw in consumer:
            message = await self._parse(raw)
            assert message is not None
            yield message

    async def _parse(self, raw: ReceivedMessage[Any] | None) -> RocketMQMessage | None:
        parser, decoder = self._get_parser_and_decoder()
        context = self._outer_config.context
        message: RocketMQMessage | None = await process_msg(  # type: ignore[assignment]
            msg=raw,
            middlewares=(m(raw, context=context) for m in self._broker_middlewares),
            parser=parser,
            decoder=decoder,
        )
        return message


def create_subscriber(
    *,
    topic: str,
    group: str,
    tags: str | None,
    sql: str | None,
    orderly: bool,
    model: MessageModel,
    consumer_options: Mapping[str, Any],
    ack_policy: AckPolicy,
    no_reply: bool,
    config: RocketMQBrokerConfig,
    title_: str | None,
    description_: str | None,
    include_in_schema: bool,
) -> RocketMQSubscriber:
    """Check what can be checked before any I/O (ConfigError naming the field), then build."""
    validate_topic(topic, error=ConfigError)
    validate_group(group)
    if not isinstance(model, MessageModel):
        raise ConfigError(f"model must be a MessageModel, not {model!r}")
    if not isinstance(consumer_options, Mapping):
        raise ConfigError(f"consumer_options must be a mapping, not {consumer_options!r}")
    fixed = {"namesrv", "instance", "namespace", "group", "subscriptions", "handler", "orderly",
             "model", "ssl_context", "credentials", "instance_name"}  # fmt: skip
    if clash := fixed & set(consumer_options):
        raise ConfigError(
            f"consumer_options may not set {sorted(clash)}: the subscriber's arguments, or the "
            "broker's (its consumers share its ClientInstance)"
        )
    if unknown := set(consumer_options) - PUSH_OPTIONS - CLIENT_OPTIONS - {"on_rebalance"}:
        raise ConfigError(
            f"consumer_options: no {sorted(unknown)} in PushOptions (nor "
            f"{', '.join(sorted(CLIENT_OPTIONS))} of ClientOptions, nor on_rebalance)"
        )
    named = with_consume_from(consumer_options)
    on_rebalance = named.pop("on_rebalance", None)
    client = ClientOptions(**{k: v for k, v in named.items() if k in CLIENT_OPTIONS})
    options = PushOptions(orderly=bool(orderly), model=model,
                          **{k: v for k, v in named.items() if k in PUSH_OPTIONS})  # fmt: skip
    channel = Channel(topic=topic, group=group, selector=selector_of(tags, sql),
                      orderly=bool(orderly), model=model)  # fmt: skip
    calls = CallsCollection[Any]()
    specification = RocketMQSubscriberSpecification(
        config,
        RocketMQSubscriberSpecificationConfig(
            channel=channel,
            title_=title_,
            description_=description_,
            include_in_schema=include_in_schema,
        ),
        calls,
    )
    usecase = RocketMQSubscriberConfig(
        channel=channel, options=options, client=client, on_rebalance=on_rebalance,
        no_reply=no_reply, _outer_config=config, _ack_policy=ack_policy,
    )  # fmt: skip
    return RocketMQSubscriber(usecase, specification, calls)
