"""``RocketMQRouter``: subscribers and publishers declared apart from the broker (a prefix
for their topics, middlewares and dependencies of their own), included with
``broker.include_router(router)``; ``RocketMQRoute`` / ``RocketMQRoutePublisher`` declare them
as data, FastStream's ``handlers=[...]`` style."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from faststream._internal.broker.router import ArgsContainer, BrokerRouter, SubscriberRoute
from faststream._internal.constants import EMPTY
from faststream.middlewares import AckPolicy

from rocketmq_actors.consumer.core.message import ReceivedMessage

from .config import RocketMQBrokerConfig
from .registrator import RocketMQRegistrator

if TYPE_CHECKING:
    from fast_depends.dependencies import Dependant
    from faststream._internal.basic_types import SendableMessage
    from faststream._internal.types import BrokerMiddleware, CustomCallable

__all__ = ["RocketMQRoute", "RocketMQRoutePublisher", "RocketMQRouter"]


class RocketMQRoutePublisher(ArgsContainer):
    """``RocketMQRegistrator.publisher``'s arguments, for a :class:`RocketMQRoute`."""

    def __init__(self, topic: str, **kwargs: Any) -> None:
        super().__init__(topic, **kwargs)


class RocketMQRoute(SubscriberRoute):
    """A handler and ``RocketMQRegistrator.subscriber``'s arguments."""

    def __init__(
        self,
        call: Callable[..., SendableMessage] | Callable[..., Awaitable[SendableMessage]],
        topic: str,
        *,
        group: str,
        publishers: Iterable[RocketMQRoutePublisher] = (),
        **kwargs: Any,
    ) -> None:
        super().__init__(call, topic, group=group, publishers=publishers, **kwargs)


class RocketMQRouter(RocketMQRegistrator, BrokerRouter[ReceivedMessage[Any], RocketMQBrokerConfig]):
    """Subscribers and publishers to include in a :class:`~.broker.RocketMQBroker`."""

    def __init__(
        self,
        prefix: str = "",
        handlers: Iterable[RocketMQRoute] = (),
        *,
        dependencies: Sequence[Dependant] = (),
        middlewares: Sequence[BrokerMiddleware[Any, Any]] = (),
        routers: Iterable[RocketMQRegistrator] = (),
        parser: CustomCallable | None = None,
        decoder: CustomCallable | None = None,
        include_in_schema: bool | None = None,
        ack_policy: AckPolicy = EMPTY,
    ) -> None:
        super().__init__(
            handlers=handlers,
            config=RocketMQBrokerConfig(
                prefix=prefix,
                ack_policy=ack_policy,
                broker_dependencies=dependencies,
                broker_middlewares=middlewares,
                broker_parser=parser,
                broker_decoder=decoder,
                include_in_schema=include_in_schema,
            ),
            routers=routers,
        )
