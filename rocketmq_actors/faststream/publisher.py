"""A FastStream publisher to a RocketMQ topic: ``@broker.publisher("results")`` sends a
handler's result (or ``await publisher.publish(...)``) with the broker's Producer, with the
publisher's default tags, keys, headers and ``reply_to`` unless the call or the handler's
:class:`~.response.RocketMQResponse` gives its own. ``await publisher.request(...)`` sends a
RocketMQ request and returns the reply (:mod:`.rpc`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from faststream._internal.configs import PublisherSpecificationConfig, PublisherUsecaseConfig
from faststream._internal.endpoint.publisher import PublisherSpecification, PublisherUsecase
from faststream.response.publish_type import PublishType
from faststream.specification.asyncapi.utils import resolve_payloads
from faststream.specification.schema import Message, Operation, PublisherSpec

from rocketmq_actors.consumer.core.settlement import Delay
from rocketmq_actors.errors import ConfigError
from rocketmq_actors.names import validate_topic

from .config import RocketMQBrokerConfig
from .message import RocketMQReplyMessage
from .producer import DEFAULT_REQUEST_TIMEOUT
from .response import RocketMQPublishCommand, as_keys

if TYPE_CHECKING:
    from faststream._internal.basic_types import SendableMessage
    from faststream._internal.types import PublisherMiddleware
    from faststream.response.response import PublishCommand

__all__ = ["RocketMQPublisher", "create_publisher"]


@dataclass(kw_only=True)
class Defaults:
    """What every message of a publisher carries unless the call says otherwise."""

    topic: str
    tags: str | None = None
    keys: tuple[str, ...] = ()
    headers: dict[str, str] = field(default_factory=dict)
    #: the topic a subscriber publishes its return value to (the ``reply_to`` property)
    reply_to: str = ""


@dataclass(kw_only=True)
class RocketMQPublisherSpecificationConfig(PublisherSpecificationConfig):
    defaults: Defaults


@dataclass(kw_only=True)
class RocketMQPublisherConfig(PublisherUsecaseConfig):
    _outer_config: RocketMQBrokerConfig = field(default_factory=RocketMQBrokerConfig)
    defaults: Defaults


class RocketMQPublisherSpecification(
    PublisherSpecification[RocketMQBrokerConfig, RocketMQPublisherSpecificationConfig]
):
    __slots__ = ()

    @property
    def topic(self) -> str:
        return f"{self._outer_config.prefix}{self.config.defaults.topic}"

    @property
    def name(self) -> str:
        return self.config.title_ or f"{self.topic}:Publisher"

    def get_schema(self) -> dict[str, PublisherSpec]:
        tags = self.config.defaults.tags
        facts = f"RocketMQ topic {self.topic}" + (f", tags {tags}" if tags else "")
        description = self.config.description_
        return {
            self.name: PublisherSpec(
                address=self.topic,
                description=f"{description}\n\n{facts}" if description else facts,
                operation=Operation(
                    message=Message(
                        title=f"{self.name}:Message",
                        payload=resolve_payloads(self.get_payloads(), "Publisher"),
                    ),
                    bindings=None,
                ),
                bindings=None,
            )
        }


class RocketMQPublisher(PublisherUsecase):
    """Sends to one topic."""

    __slots__ = ("defaults",)

    _outer_config: RocketMQBrokerConfig

    def __init__(
        self, config: RocketMQPublisherConfig, specification: PublisherSpecification[Any, Any]
    ) -> None:
        super().__init__(config, specification)
        self.defaults = config.defaults

    @property
    def topic(self) -> str:
        return f"{self._outer_config.prefix}{self.defaults.topic}"

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
    ) -> Any:
        """Send one message; returns the :class:`~rocketmq_actors.producer.SendResult`."""
        cmd = RocketMQPublishCommand(
            message,
            topic=topic or self.topic,
            keys=self.defaults.keys if keys is None else keys,
            tags=self.defaults.tags if tags is None else tags,
            delay=delay,
            sharding_key=sharding_key,
            headers=self.defaults.headers | (headers or {}),
            correlation_id=correlation_id or self._outer_config.id_generator(),
            reply_to=reply_to or self.defaults.reply_to,
            timeout=timeout,
            _publish_type=PublishType.PUBLISH,
        )
        return await self._basic_publish(
            cmd, producer=self._outer_config.producer, _extra_middlewares=()
        )

    async def _publish(
        self, cmd: PublishCommand, *, _extra_middlewares: Iterable[PublisherMiddleware]
    ) -> None:
        """A handler's result (called in the subscriber's flow)."""
        real = RocketMQPublishCommand.from_cmd(cmd)
        real.destination = self.topic  # this publisher's topic, not the reply topic
        real.add_headers(self.defaults.headers, override=False)
        real.tags = real.tags if real.tags is not None else self.defaults.tags
        real.keys = real.keys or self.defaults.keys
        real.reply_to = real.reply_to or self.defaults.reply_to
        real.publish_type = PublishType.PUBLISH
        await self._basic_publish(
            real, producer=self._outer_config.producer, _extra_middlewares=_extra_middlewares
        )

    async def request(
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
        """Send one message as a RocketMQ request (to this publisher's topic, with its
        defaults) and wait for the reply: as :meth:`RocketMQBroker.request`."""
        cmd = RocketMQPublishCommand(
            message,
            topic=topic or self.topic,
            keys=self.defaults.keys if keys is None else keys,
            tags=self.defaults.tags if tags is None else tags,
            sharding_key=sharding_key,
            headers=self.defaults.headers | (headers or {}),
            correlation_id=correlation_id or self._outer_config.id_generator(),
            timeout=timeout,
            _publish_type=PublishType.REQUEST,
        )
        reply: RocketMQReplyMessage = await self._basic_request(
            cmd, producer=self._outer_config.producer
        )
        return reply


def create_publisher(
    *,
    topic: str,
    tags: str | None,
    keys: str | Sequence[str] | None,
    headers: dict[str, str] | None,
    reply_to: str,
    config: RocketMQBrokerConfig,
    schema_: Any | None,
    title_: str | None,
    description_: str | None,
    include_in_schema: bool,
) -> RocketMQPublisher:
    validate_topic(topic, error=ConfigError)
    if tags is not None and not isinstance(tags, str):
        raise ConfigError(f"tags must be a string, not {tags!r}")
    if headers is not None and not isinstance(headers, dict):
        raise ConfigError(f"headers must be a dict of strings, not {headers!r}")
    if reply_to:
        validate_topic(reply_to, error=ConfigError)
    defaults = Defaults(topic=topic, tags=tags, keys=as_keys(keys), headers=dict(headers or {}),
                        reply_to=reply_to)  # fmt: skip
    specification = RocketMQPublisherSpecification(
        config,
        RocketMQPublisherSpecificationConfig(
            defaults=defaults,
            schema_=schema_,
            title_=title_,
            description_=description_,
            include_in_schema=include_in_schema,
        ),
    )
    return RocketMQPublisher(
        RocketMQPublisherConfig(defaults=defaults, _outer_config=config), specification
    )
