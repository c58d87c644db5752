"""FastStream's producer for RocketMQ: a publish command -> a :class:`Message` sent by our
:class:`~rocketmq_actors.producer.Producer`.

The body is encoded by FastStream's codec (the broker's ``serializer``: JSON for models and
dicts, UTF-8 for text, bytes as they are); its content type, the correlation id and the reply
topic become user properties (:mod:`.message`). ``delay`` is a delay level (seconds, a
``timedelta`` or a ``DelayLevel``, as :func:`~rocketmq_actors.consumer.settlement.delay_level`
maps it), which both 4.9 and 5.x brokers honour. A request goes by
:meth:`Producer.request <rocketmq_actors.producer.Producer.request>` and a reply to one by
:func:`.rpc.send_reply` (:mod:`.rpc`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from faststream._internal.endpoint.utils import ParserComposition
from faststream._internal.parser import DefaultCodec
from faststream._internal.producer import ProducerProto
from faststream.exceptions import FeatureNotSupportedException

from rocketmq_actors.consumer.core.settlement import delay_level
from rocketmq_actors.errors import AccessDenied, BrokerError, ClientStateError, ReplyTimeout
from rocketmq_actors.logs import get_logger
from rocketmq_actors.producer import Message, Producer
from rocketmq_actors.protocol.events import ReplyMessage

from .message import CONTENT_TYPE, CORRELATION_ID, REPLY_TO, RocketMQParser
from .response import RocketMQPublishCommand
from .rpc import RequestTimeoutError, send_reply

if TYPE_CHECKING:
    from fast_depends.library.serializer import SerializerProto
    from faststream._internal.parser import CodecProto
    from faststream._internal.types import AsyncCallable, CustomCallable

__all__ = ["DEFAULT_REQUEST_TIMEOUT", "RocketMQFastProducer", "to_message"]

log = get_logger("rocketmq_actors.faststream")

#: ``request``'s timeout when none is given (``Producer.request``'s default)
DEFAULT_REQUEST_TIMEOUT = 3.0


async def to_message(
    cmd: RocketMQPublishCommand, codec: CodecProto, serializer: SerializerProto | None
) -> Message:
    """The RocketMQ message a command sends (InvalidMessage/ConfigError for bad fields come
    from :class:`Message` and the producer's checks, before any I/O)."""
    body, content_type = await codec.encode(cmd.body, serializer)
    properties = {str(k): str(v) for k, v in (cmd.headers or {}).items()}
    if content_type:
        properties[CONTENT_TYPE] = content_type
    if cmd.correlation_id:
        properties[CORRELATION_ID] = cmd.correlation_id
    if cmd.reply_to:
        properties[REPLY_TO] = cmd.reply_to
    return Message(
        topic=cmd.destination,
        body=body,
        tags=cmd.tags,
        keys=cmd.keys,
        properties=properties,
        delay_level=0 if cmd.delay is None else delay_level(cmd.delay),
    )


class RocketMQFastProducer(ProducerProto[RocketMQPublishCommand]):
    """Sends FastStream's publish commands with a running :class:`Producer`."""

    __slots__ = ("_decoder", "_parser", "codec", "producer", "serializer")

    def __init__(
        self,
        *,
        parser: CustomCallable | None = None,
        decoder: CustomCallable | None = None,
        codec: CodecProto | None = None,
    ) -> None:
        default = RocketMQParser()
        self._parser: AsyncCallable = ParserComposition(parser, default.parse_message)
        self._decoder: AsyncCallable = ParserComposition(decoder, default.decode_message)
        self.codec: CodecProto = codec or DefaultCodec()
        self.producer: Producer | None = None
        self.serializer: SerializerProto | None = None

    def connect(self, producer: Producer, serializer: SerializerProto | None) -> None:
        self.producer, self.serializer = producer, serializer

    def disconnect(self) -> None:
        self.producer = None

    def _running(self) -> Producer:
        if self.producer is None:
            raise ClientStateError("the RocketMQ broker is not connected: start it first")
        return self.producer

    async def publish(self, cmd: RocketMQPublishCommand) -> Any:
        """Sends; returns the :class:`SendResult` (the in-memory producer: the settlements).
        A reply to a request (``cmd.answers``) goes back to its requester: returns None."""
        message = await to_message(cmd, self.codec, self.serializer)
        if cmd.answers is not None:
            try:
                await send_reply(self._running(), cmd.answers, message, timeout=cmd.timeout)
            except AccessDenied:
                raise
            except BrokerError as exc:
                # the broker could not push it: the requester is gone (a Java one may also
                # refuse a late reply); consuming the request again would not reach it either
                log.warning("faststream.reply.undeliverable", topic=cmd.answers.topic,
                            error=repr(exc))  # fmt: skip
            return None
        return await self._running().send(
            message, sharding_key=cmd.sharding_key, timeout=cmd.timeout
        )

    async def request(self, cmd: RocketMQPublishCommand) -> ReplyMessage:
        """Sends ``cmd`` as a RocketMQ request and waits for the reply, ``cmd.timeout``
        seconds in all (:class:`~.rpc.RequestTimeoutError` after that)."""
        message = await to_message(cmd, self.codec, self.serializer)
        timeout = DEFAULT_REQUEST_TIMEOUT if cmd.timeout is None else cmd.timeout
        try:
            return await self._running().request(message, timeout, sharding_key=cmd.sharding_key)
        except ReplyTimeout as exc:
            raise RequestTimeoutError.of(exc) from exc

    async def publish_batch(self, cmd: RocketMQPublishCommand) -> Any:
        raise FeatureNotSupportedException(
            "batch publishing through FastStream is not supported: use Producer.send_batch"
        )
