"""``RocketMQBroker``: FastStream's broker for RocketMQ, on our Producer and PushConsumer.

    broker = RocketMQBroker(namesrv="127.0.0.1:9876")

    @broker.subscriber("orders", group="billing", tags="paid")
    @broker.publisher("receipts")
    async def bill(order: Order) -> Receipt: ...

    app = FastStream(broker)          # or: async with broker: await broker.start()

Connecting starts a :class:`~rocketmq_actors.cluster.instance.ClientInstance` (options:
``client_options``) and a :class:`~rocketmq_actors.producer.Producer` on it (group
``producer_group``); each subscriber starts its own
:class:`~rocketmq_actors.consumer.push.PushConsumer` on the same instance when the broker
starts, and stops it (handlers in flight finish, offsets persisted) when it stops, before the
producer and the instance stop.
"""

from __future__ import annotations

import inspect
import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

from fast_depends import dependency_provider
from faststream._internal.broker import BrokerUsecase
from faststream._internal.constants import EMPTY
from faststream._internal.context.repository import ContextRepo
from faststream._internal.di import FastDependsConfig
from faststream._internal.logger import DefaultLoggerStorage, make_logger_state
from faststream._internal.logger.logging import ExtendedFilter
from faststream.message import gen_cor_id
from faststream.middlewares import AckPolicy
from faststream.response.publish_type import PublishType
from faststream.specification.schema import BrokerSpec

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.cluster.member import NAMESRV_ENV
from rocketmq_actors.cluster.options import ClientOptions
from rocketmq_actors.consumer.core.message import ReceivedMessage
from rocketmq_actors.consumer.core.settlement import Delay
from rocketmq_actors.errors import ConfigError
from rocketmq_actors.names import validate_group
from rocketmq_actors.producer import Producer, ProducerOptions, SendResult

from .config import RocketMQBrokerConfig
from .message import RocketMQReplyMessage
from .producer import DEFAULT_REQUEST_TIMEOUT, RocketMQFastProducer
from .registrator import RocketMQRegistrator
from .response import RocketMQPublishCommand

if TYPE_CHECKING:
    from fast_depends import Provider
    from fast_depends.dependencies import Dependant
    from fast_depends.library.serializer import SerializerProto
    from faststream._internal.basic_types import LoggerProto, SendableMessage
    from faststream._internal.context import ContextRepo as ContextRepoType
    from faststream._internal.types import BrokerMiddleware, CustomCallable
    from faststream.security import BaseSecurity
    from faststream.specification.schema.extra import Tag, TagDict

__all__ = ["RocketMQBroker"]

#: what client_options may set: the ClientInstance's keyword arguments
CLIENT_OPTIONS = frozenset(inspect.signature(ClientInstance).parameters) - {"namesrv"}


def resolve_namesrv(namesrv: str | Sequence[str] | None) -> str | Sequence[str]:
    """The NameServer address(es): given, or ``$NAMESRV_ADDR`` as our clients read it."""
    resolved = namesrv or os.environ.get(NAMESRV_ENV)
    if not resolved:
        raise ConfigError(f"give a NameServer address (namesrv=... or ${NAMESRV_ENV})")
    return resolved


def check_producer_client(client: ClientOptions | None) -> ClientOptions:
    """The producer's own ClientOptions: tracing, trace, timeouts, on_error. What the shared
    ClientInstance or the broker decides (address, namespace, name, TLS, ACL) is refused."""
    if client is None:
        return ClientOptions()
    if not isinstance(client, ClientOptions):
        raise ConfigError(f"producer_client must be a ClientOptions, not {type(client).__name__}")
    shared = ("namesrv", "namespace", "instance_name", "ssl_context", "credentials")
    if clash := [name for name in shared if getattr(client, name) is not None]:
        raise ConfigError(
            f"producer_client may not set {clash}: the broker's arguments (namespace=, "
            "client_options=) set them for the producer and every consumer"
        )
    return client


ACCESS_LOGGER = "faststream.access.rocketmq"


class RocketMQParamsStorage(DefaultLoggerStorage):
    """FastStream's access log for RocketMQ, on the standard ``logging`` logger
    ``faststream.access.rocketmq`` with no handler of its own: silent unless the application
    configures logging, as every logger of this library (FastStream's other brokers print to
    stdout by default). Records carry ``topic``, ``group`` and ``message_id`` for a format."""

    def __init__(self) -> None:
        super().__init__()
        self.logger_log_level = logging.INFO

    def set_level(self, level: int) -> None:
        self.logger_log_level = level

    def register_subscriber(self, params: dict[str, Any]) -> None:
        """Nothing to measure: the application's formatter lays the lines out."""

    def get_logger(self, *, context: ContextRepoType) -> LoggerProto:
        if not (lg := self._get_logger_ref()):
            lg = logging.getLogger(ACCESS_LOGGER)
            lg.setLevel(self.logger_log_level)
            if not any(isinstance(f, ExtendedFilter) for f in lg.filters):
                lg.addFilter(ExtendedFilter({"topic": "", "group": ""}, 10, context=context))
            self._logger_ref.add(lg)
        return lg


class RocketMQBroker(
    RocketMQRegistrator,
    BrokerUsecase[ReceivedMessage[Any], Producer, RocketMQBrokerConfig],
):
    """A FastStream broker for RocketMQ (NameServer ``namesrv``, or ``$NAMESRV_ADDR``)."""

    def __init__(
        self,
        namesrv: str | Sequence[str] | None = None,
        *,
        producer_group: str = "faststream",
        namespace: str | None = None,
        client_options: Mapping[str, Any] | None = None,
        producer_options: ProducerOptions | None = None,
        producer_client: ClientOptions | None = None,
        graceful_timeout: float | None = 15.0,
        decoder: CustomCallable | None = None,
        parser: CustomCallable | None = None,
        dependencies: Sequence[Dependant] = (),
        middlewares: Sequence[BrokerMiddleware[Any, Any]] = (),
        routers: Iterable[RocketMQRegistrator] = (),
        ack_policy: AckPolicy = EMPTY,
        # AsyncAPI
        specification_url: str | None = None,
        protocol: str | None = "rocketmq",
        protocol_version: str | None = None,
        description: str | None = None,
        tags: Iterable[Tag | TagDict] = (),
        security: BaseSecurity | None = None,
        # logging
        logger: LoggerProto | None = EMPTY,
        log_level: int = logging.INFO,
        # FastDepends
        apply_types: bool = True,
        serializer: SerializerProto | None = EMPTY,
        provider: Provider | None = None,
        context: ContextRepo | None = None,
    ) -> None:
        validate_group(producer_group)
        client = dict(client_options or {})
        if unknown := set(client) - CLIENT_OPTIONS:
            raise ConfigError(f"client_options: ClientInstance takes no {sorted(unknown)}")
        if producer_options is None:
            producer_options = ProducerOptions()
        if not isinstance(producer_options, ProducerOptions):
            raise ConfigError(
                f"producer_options must be a ProducerOptions, not {type(producer_options).__name__}"
            )
        producer_client = check_producer_client(producer_client)
        shown = namesrv or os.environ.get(NAMESRV_ENV) or f"${NAMESRV_ENV}"
        url = [f"rocketmq://{a}" for a in ([shown] if isinstance(shown, str) else shown)]
        super().__init__(
            producer_group=producer_group,
            producer_options=producer_options,
            producer_client=producer_client,
            routers=routers,
            config=RocketMQBrokerConfig(
                namesrv=namesrv,
                namespace=namespace,
                client_options=client,
                producer=RocketMQFastProducer(parser=parser, decoder=decoder),
                broker_middlewares=middlewares,
                broker_parser=parser,
                broker_decoder=decoder,
                logger=make_logger_state(
                    logger=logger,
                    log_level=log_level,
                    default_storage_cls=RocketMQParamsStorage,
                ),
                fd_config=FastDependsConfig(
                    use_fastdepends=apply_types,
                    serializer=serializer,
                    provider=provider or dependency_provider,
                    context=context or ContextRepo(),
                ),
                broker_dependencies=dependencies,
                graceful_timeout=graceful_timeout,
                ack_policy=ack_policy,
                id_generator=gen_cor_id,
                extra_context={"broker": self},
            ),
            specification=BrokerSpec(
                description=description,
                url=[specification_url] if specification_url else url,
                protocol=protocol,
                protocol_version=protocol_version,
                tags=tags,
                security=security,
            ),
        )

    @property
    def producer(self) -> Producer | None:
        """The running :class:`Producer` (None before ``connect()``)."""
        return self._connection

    async def _connect(self) -> Producer:
        """Start the ClientInstance the producer and every consumer share (one set of broker
        connections, one client id, as Java's MQClientInstance), then the producer."""
        config, kwargs = self.config.broker_config, self._connection_kwargs
        instance = ClientInstance(resolve_namesrv(config.namesrv), **config.client_options)
        producer = Producer(
            group=kwargs["producer_group"],
            options=kwargs["producer_options"],
            client=kwargs["producer_client"].evolve(namespace=config.namespace),
            instance=instance,
        )
        await instance.start()
        try:
            await producer.start()
        except BaseException:
            await instance.stop()
            raise
        config.connect(producer)
        return producer

    async def start(self) -> None:
        await self.connect()
        await super().start()

    async def stop(
        self,
        exc_type: type[BaseException] | None = None,
        exc_val: BaseException | None = None,
        exc_tb: TracebackType | None = None,
    ) -> None:
        try:
            await super().stop(exc_type, exc_val, exc_tb)  # the subscribers first
        finally:
            producer, self._connection = self._connection, None
            self.config.broker_config.disconnect()
            if producer is not None:
                try:
                    await producer.stop()
                finally:
                    await producer.instance.stop()

    async def ping(self, timeout: float | None = None) -> bool:
        return self._connection is not None and self._connection.health().ready

    async def publish(
        self,
        message: SendableMessage = None,
        topic: str = "",
        *,
        keys: str | Sequence[str] | None = None,
        tags: str | None = None,
        delay: Delay | None = None,
        sharding_key: str | None = None,
        headers: dict[str, str] | None = None,
        correlation_id: str | None = None,
        reply_to: str = "",
        timeout: float | None = None,
    ) -> SendResult:
        """Send one message to ``topic``; returns the :class:`SendResult`. ``delay``: a
        delay level (seconds, ``timedelta`` or ``DelayLevel``); ``sharding_key``: same key,
        same queue, in order."""
        cmd = RocketMQPublishCommand(
            message,
            topic=topic,
            keys=keys,
            tags=tags,
            delay=delay,
            sharding_key=sharding_key,
            headers=headers,
            correlation_id=correlation_id or self.config.id_generator(),
            reply_to=reply_to,
            timeout=timeout,
            _publish_type=PublishType.PUBLISH,
        )
        result: SendResult = await self._basic_publish(cmd, producer=self.config.producer)
        return result

    async def request(  # type: ignore[override]
        self,
        message: SendableMessage = None,
        topic: str = "",
        *,
        keys: str | Sequence[str] | None = None,
        tags: str | None = None,
        sharding_key: str | None = None,
        headers: dict[str, str] | None = None,
        correlation_id: str | None = None,
        timeout: float = DEFAULT_REQUEST_TIMEOUT,
    ) -> RocketMQReplyMessage:
        """Send one message to ``topic`` as a RocketMQ request and wait for the reply, a
        subscriber's return value (``await reply.decode()``): ``timeout`` seconds in all, then
        :class:`~.rpc.RequestTimeoutError` (a ``TimeoutError``). See docs/faststream.md."""
        cmd = RocketMQPublishCommand(
            message,
            topic=topic,
            keys=keys,
            tags=tags,
            sharding_key=sharding_key,
            headers=headers,
            correlation_id=correlation_id or self.config.id_generator(),
            timeout=timeout,
            _publish_type=PublishType.REQUEST,
        )
        reply: RocketMQReplyMessage = await self._basic_request(cmd, producer=self.config.producer)
        return reply
