"""FastStream's FastAPI integration for RocketMQ: a FastAPI ``APIRouter`` that owns a
:class:`~.broker.RocketMQBroker`, started and stopped by the app's lifespan, whose handlers take
FastAPI dependencies (``Depends``) and whose AsyncAPI schema is served at ``/asyncapi``.

    router = RocketMQRouter("127.0.0.1:9876")

    @router.subscriber("orders", group="billing")
    async def bill(order: Order, settings: Settings = Depends(get_settings)) -> None: ...

    app = FastAPI()
    app.include_router(router)

The keyword arguments after ``namesrv`` are :class:`RocketMQBroker`'s and FastAPI
``APIRouter``'s, as FastStream's own FastAPI routers take them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from fastapi.datastructures import Default
from faststream._internal.constants import EMPTY
from faststream._internal.context import ContextRepo
from faststream._internal.fastapi.router import StreamRouter
from faststream.middlewares import AckPolicy

from rocketmq_actors.consumer.core.message import ReceivedMessage
from rocketmq_actors.consumer.core.options import MessageModel

from .broker import RocketMQBroker
from .publisher import RocketMQPublisher
from .subscriber import RocketMQSubscriber

if TYPE_CHECKING:
    from fastapi import params
    from fastapi.types import IncEx
    from faststream._internal.types import CustomCallable

__all__ = ["RocketMQRouter"]

NO_RESPONSE_MODEL: Any = Default(None)  # FastAPI's own default


class RocketMQRouter(StreamRouter[ReceivedMessage[Any]]):
    """A FastAPI router with a RocketMQ broker (``router.broker``)."""

    broker_class = RocketMQBroker
    broker: RocketMQBroker

    def __init__(
        self,
        namesrv: str | Sequence[str] | None = None,
        *,
        context: ContextRepo | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(namesrv, context=context, **kwargs)

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
        dependencies: Iterable[params.Depends] = (),
        parser: CustomCallable | None = None,
        decoder: CustomCallable | None = None,
        persistent: bool = True,
        title: str | None = None,
        description: str | None = None,
        include_in_schema: bool = True,
        response_model: Any = NO_RESPONSE_MODEL,
        response_model_include: IncEx | None = None,
        response_model_exclude: IncEx | None = None,
        response_model_by_alias: bool = True,
        response_model_exclude_unset: bool = False,
        response_model_exclude_defaults: bool = False,
        response_model_exclude_none: bool = False,
    ) -> RocketMQSubscriber:
        """As :meth:`RocketMQBroker.subscriber`, with FastAPI dependencies and response
        model options."""
        sub = super().subscriber(
            topic,
            group=group,
            tags=tags,
            sql=sql,
            orderly=orderly,
            model=model,
            consumer_options=consumer_options,
            ack_policy=ack_policy,
            no_reply=no_reply,
            dependencies=dependencies,
            parser=parser,
            decoder=decoder,
            persistent=persistent,
            title=title,
            description=description,
            include_in_schema=include_in_schema,
            response_model=response_model,
            response_model_include=response_model_include,
            response_model_exclude=response_model_exclude,
            response_model_by_alias=response_model_by_alias,
            response_model_exclude_unset=response_model_exclude_unset,
            response_model_exclude_defaults=response_model_exclude_defaults,
            response_model_exclude_none=response_model_exclude_none,
        )
        return cast("RocketMQSubscriber", sub)

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
        return self.broker.publisher(
            topic, tags=tags, keys=keys, headers=headers, reply_to=reply_to,
            persistent=persistent, title=title,
            description=description, schema=schema, include_in_schema=include_in_schema,
        )  # fmt: skip
