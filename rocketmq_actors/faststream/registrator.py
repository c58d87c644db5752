"""``@broker.subscriber`` / ``@broker.publisher``, shared by the broker and its routers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from faststream._internal.broker.registrator import Registrator
from faststream._internal.constants import EMPTY
from faststream.middlewares import AckPolicy

from rocketmq_actors.consumer.core.message import ReceivedMessage
from rocketmq_actors.consumer.core.options import MessageModel
from rocketmq_actors.errors import ConfigError

from .config import RocketMQBrokerConfig
from .publisher import RocketMQPublisher, create_publisher
from .subscriber import RocketMQSubscriber, create_subscriber

if TYPE_CHECKING:
    from fast_depends.dependencies import Dependant
    from faststream._internal.types import BrokerMiddleware, CustomCallable

__all__ = ["RocketMQRegistrator"]


class RocketMQRegistrator(Registrator[ReceivedMessage[Any], RocketMQBrokerConfig]):
    """Declares subscribers and publishers (a broker, or a router included in one)."""

    def subscriber(  # type: ignore[override]
        self,
        topic: str,
        *,
        group: str,
        tags: str | None = None,
        sql: str | None = None,
        orderly: bool = False,
        model: MessageModel = MessageModel.CLUSTERING,
        consumer_options: Mapping[str, Any] | None = None,
        ack_policy: AckPolicy = EMPTY,
        no_reply: bool = False,
        dependencies: Sequence[Dependant] = (),
        parser: CustomCallable | None = None,
        decoder: CustomCallable | None = None,
        persistent: bool = True,
        title: str | None = None,
        description: str | None = None,
        include_in_schema: bool = True,
    ) -> RocketMQSubscriber:
        """Consume ``topic`` as consumer ``group``.

        Args:
            topic: the topic.
            group: the consumer group (one PushConsumer per subscriber).
            tags: a tag expression (``"paid || refunded"``; default ``*``).
            sql: a SQL92 selector over properties instead of ``tags`` (the broker needs
                ``enablePropertyFilter=true``).
            orderly: consume each queue in order (queue locks; a nack suspends the queue).
            model: clustering (each message to one member) or broadcasting (to every member).
            consumer_options: fields of the consumer's
                :class:`~rocketmq_actors.consumer.push.PushOptions` (``consume_from``,
                ``concurrency``, ``max_reconsume_times``, ``retry_delay_level``, ...), of its
                ``ClientOptions`` (``request_timeout``, ``shutdown_timeout``, ``tracing``,
                ``trace``, ``trace_topic``, ``on_error``) and ``on_rebalance``.
            ack_policy: FastStream's policy; default ``NACK_ON_ERROR`` (reconsume later).
            no_reply: do not publish the handler's result to the message's ``reply_to``.
            dependencies, parser, decoder: as FastStream's other brokers.
            persistent: keep the subscriber registered (FastStream's meaning).
            title, description, include_in_schema: the AsyncAPI channel.
        """
        subscriber = create_subscriber(
            topic=topic,
            group=group,
            tags=tags,
            sql=sql,
            orderly=orderly,
            model=model,
            consumer_options=consumer_options or {},
            ack_policy=ack_policy,
            no_reply=no_reply,
            config=cast("RocketMQBrokerConfig", self.config),
            title_=title,
            description_=description,
            include_in_schema=include_in_schema,
        )
        super().subscriber(subscriber, persistent=persistent)
        return subscriber.add_call(
            parser_=parser or self._parser,
            decoder_=decoder or self._decoder,
            dependencies_=dependencies,
        )

    def publisher(  # type: ignore[override]
        self,
        topic: str,
        *,
        tags: str | None = None,
        keys: str | Sequence[str] | None = None,
        headers: dict[str, str] | None = None,
        reply_to: str = "",
        persistent: bool = True,
        title: str | None = None,
        description: str | None = None,
        schema: Any | None = None,
        include_in_schema: bool = True,
    ) -> RocketMQPublisher:
        """A publisher to ``topic``, with default ``tags``, ``keys`` and ``headers``;
        ``reply_to``: each message it sends names that topic as where a subscriber publishes
        its handler's return value (FastStream's ``reply_to``)."""
        publisher = create_publisher(
            topic=topic,
            tags=tags,
            keys=keys,
            headers=headers,
            reply_to=reply_to,
            config=cast("RocketMQBrokerConfig", self.config),
            schema_=schema,
            title_=title,
            description_=description,
            include_in_schema=include_in_schema,
        )
        super().publisher(publisher, persistent=persistent)
        return publisher

    def include_router(  # type: ignore[override]
        self,
        router: RocketMQRegistrator,
        *,
        prefix: str = "",
        dependencies: Sequence[Dependant] = (),
        middlewares: Sequence[BrokerMiddleware[Any, Any]] = (),
        include_in_schema: bool | None = None,
    ) -> None:
        if not isinstance(router, RocketMQRegistrator):
            raise ConfigError(f"a RocketMQ broker includes RocketMQ routers, not {router!r}")
        super().include_router(
            router,
            prefix=prefix,
            dependencies=dependencies,
            middlewares=middlewares,
            include_in_schema=include_in_schema,
        )
