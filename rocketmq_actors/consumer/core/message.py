"""The message a consumer delivers: a :class:`MessageExt` with its deserialized ``value`` and,
from a push consumer, its settlement (``ack``, ``nack``, ``async with message.process()``).

:class:`ReceivedMessage` subclasses the protocol record (``isinstance(m, MessageExt)`` holds and
every field is there); the pull decoder builds it directly (no copy), and the consumer sets its
two slots: the value (:func:`deserialize`) and, for each delivery to a handler or to
``async for``, a fresh :class:`~.settlement.Settlement`.

Without a ``value_deserializer`` the value is the body (``bytes``). A body the deserializer
rejects is poison: a push consumer marks the message as undecodable (``decode_error``), so it
never reaches the handler and goes the way undecodable messages go (see :mod:`.dispatch`); a
pull consumer raises :class:`RecordDeserializationError` (see :mod:`.pull`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, cast

import attrs

from rocketmq_actors.consumer.core.settlement import Delay, Settlement, SettlementNotSupported
from rocketmq_actors.errors import RocketMQError
from rocketmq_actors.logs import get_logger
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.records import MessageExt

if TYPE_CHECKING:  # a default needs PEP 696 (typing_extensions); at run time a plain TypeVar
    from typing_extensions import TypeVar

    T = TypeVar("T", default=bytes)
else:
    from typing import TypeVar

    T = TypeVar("T")

__all__ = [
    "ProcessContext", "ReceivedMessage", "RecordDeserializationError", "deserialize",
    "deserialize_record", "received",
]  # fmt: skip

log = get_logger("rocketmq_actors.consumer")

_RAW: Any = object()  # the value slot before (or without) a deserializer: the body


class RecordDeserializationError(RocketMQError):
    """A pull consumer's ``value_deserializer`` rejected a record (the deserializer's exception
    is the ``__cause__``). The queue's position stays on the record (as Kafka's
    RecordDeserializationException): ``consumer.seek(error.queue, error.offset + 1)`` skips it."""

    def __init__(self, queue: MessageQueue, offset: int, message: MessageExt, reason: str) -> None:
        super().__init__(f"value_deserializer rejected {queue} offset {offset}: {reason}")
        self.queue, self.offset, self.message = queue, offset, message


@attrs.define(slots=True, eq=True)
class ReceivedMessage(MessageExt, Generic[T]):
    """A consumed message: the stored record, its ``value`` and its settlement."""

    _value: Any = attrs.field(default=_RAW, init=False, eq=False, repr=False)
    _settlement: Settlement | None = attrs.field(default=None, init=False, eq=False, repr=False)
    #: when it arrived here (epoch milliseconds; 0: not known)
    arrived_ms: int = attrs.field(default=0, init=False, eq=False, repr=False)

    @property
    def value(self) -> T:
        """The body as the consumer's ``value_deserializer`` made it (the body itself, bytes,
        without one)."""
        value = self._value
        return cast("T", self.body if value is _RAW else value)

    def set_value(self, value: object) -> None:
        self._value = value

    @property
    def settlement(self) -> Settlement | None:
        """The settlement of the current delivery (None: not delivered by a push consumer)."""
        return self._settlement

    def settle_with(self, settlement: Settlement | None) -> None:
        self._settlement = settlement

    def _settling(self) -> Settlement:
        if self._settlement is None:
            raise SettlementNotSupported(
                "only a push consumer's messages are settled with ack/nack; a pull consumer "
                "commits offsets (commit(), auto_commit)"
            )
        return self._settlement

    def ack(self) -> None:
        """Consumed: its offset may be committed (whatever the handler does next)."""
        self._settling().ack()

    def nack(self, delay: Delay | None = None, *, requeue: bool = True) -> None:
        """Consume it again later. ``delay``: a duration (seconds or a ``timedelta``: the
        smallest delay level at least that long, at most 2 h) or a ``DelayLevel(1-18)``;
        None: the consumer's ``retry_delay_level``. ``requeue=False`` sends it to
        ``%DLQ%<group>`` at once. In orderly mode the queue is suspended for the delay (at most
        30 s, as Java's) and the same message is delivered again."""
        self._settling().nack(delay, requeue=requeue)

    @property
    def settled(self) -> bool:
        """Acked or nacked in this delivery."""
        return self._settlement is not None and self._settlement.settled

    def process(
        self, *, requeue: bool = True, delay: Delay | None = None, ignore_processed: bool = False
    ) -> ProcessContext:
        """``async with message.process():`` ack on a normal exit; on an exception, nack
        (``requeue``, ``delay`` as :meth:`nack`) and let the exception go on, as aio-pika's
        ``process()``. With ``ignore_processed`` a message settled inside the block is left as
        it is on exit; without it, acking again on a normal exit raises
        :class:`~.settlement.MessageAlreadySettled` (an exception is never masked so). If the
        delivery ended while the block ran (the consumer is stopping, ``consume_timeout``
        passed), the exit settles nothing - the message is consumed again - and an exception
        from the block goes on unchanged."""
        if delay is not None:
            Settlement.check_delay(delay)  # before the block runs
        return ProcessContext(self, requeue=requeue, delay=delay, ignore=ignore_processed)


def received(message: MessageExt) -> ReceivedMessage[Any]:
    """``message`` as a ReceivedMessage: itself when pulled (decoded as one), else a copy (a
    message the broker sends to be consumed directly)."""
    if isinstance(message, ReceivedMessage):
        return message
    fields: dict[str, Any] = {
        f.alias or f.name: getattr(message, f.name) for f in attrs.fields(MessageExt) if f.init
    }
    return ReceivedMessage(**fields)


class ProcessContext:
    def __init__(
        self, message: ReceivedMessage[Any], *, requeue: bool, delay: Delay | None, ignore: bool
    ) -> None:
        self._message, self._requeue, self._delay, self._ignore = message, requeue, delay, ignore

    async def __aenter__(self) -> ReceivedMessage[Any]:
        self._message._settling()
        return self._message

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        message = self._message
        settlement = message._settling()
        if settlement.closed and not settlement.settled:
            # the delivery ended while the block ran (the consumer is stopping, consume_timeout
            # passed): the message is consumed again whatever the block did, so its exit
            # settles nothing - and never replaces the block's own exception
            log.debug("consumer.process_after_end", msg_id=message.msg_id, topic=message.topic,
                      queue_offset=message.queue_offset, raised=kind is not None)  # fmt: skip
            return
        if kind is None:
            if not (self._ignore and message.settled):
                message.ack()
        elif not message.settled:
            message.nack(self._delay, requeue=self._requeue)


def deserialize(
    messages: Iterable[MessageExt], deserializer: Callable[[bytes], object], group: str
) -> None:
    """A push consumer's: set each message's value; one the deserializer rejects is marked
    undecodable (``decode_error``: it goes the way of poison) and logged."""
    for message in messages:
        if message.decode_error is not None or not isinstance(message, ReceivedMessage):
            continue
        try:
            message.set_value(deserializer(message.body))
        except Exception as exc:
            message.decode_error = f"value_deserializer: {exc!r}"
            log.warning("consumer.deserialize_failed", group=group, msg_id=message.msg_id,
                        topic=message.topic, queue_offset=message.queue_offset,
                        error=repr(exc))  # fmt: skip


def deserialize_record(
    message: MessageExt, deserializer: Callable[[bytes], object], queue: MessageQueue
) -> None:
    """A pull consumer's: set the value or raise :class:`RecordDeserializationError`."""
    if not isinstance(message, ReceivedMessage) or message._value is not _RAW:
        return  # (a record put back after another one failed keeps its value)
    if message.decode_error is not None:
        raise RecordDeserializationError(queue, message.queue_offset, message,
                                         message.decode_error)  # fmt: skip
    try:
        message.set_value(deserializer(message.body))
    except Exception as exc:
        raise RecordDeserializationError(queue, message.queue_offset, message,
                                         repr(exc)) from exc  # fmt: skip
