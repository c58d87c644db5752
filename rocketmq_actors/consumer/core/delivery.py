"""``async for message in consumer``: messages handed to the iterating task one at a time.

A worker that would call a handler hands its message over a zero-capacity stream instead and
waits: the message counts as consumed when it is acked (``message.ack()``, or the end of an
``async with message.process()`` block) or, if it was not settled, when the loop asks for the
next one; as a failure when it is nacked (``message.nack(delay=...)``,
:meth:`Deliveries.reconsume_later`); and as not consumed (its offset not committed, so it is
delivered again) when the consumer stops first. The explicit call wins, and ends the delivery
at once: the worker goes on while the loop body still runs.
"""

from __future__ import annotations

from typing import Any

import anyio
import attrs
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from rocketmq_actors.consumer.core.message import ReceivedMessage
from rocketmq_actors.consumer.core.settlement import Delay, Settlement
from rocketmq_actors.errors import ConfigError
from rocketmq_actors.protocol.records import MessageExt

__all__ = ["Abandoned", "Deliveries"]


class Abandoned(Exception):
    """The consumer stopped while a message waited for (or was in) ``async for``: it is left
    unconsumed (its offset is not committed), so it is delivered again later."""


@attrs.define(eq=False)
class _Delivery:
    message: ReceivedMessage[Any]
    done: anyio.Event = attrs.field(factory=anyio.Event)
    abandoned: bool = False


class Deliveries:
    def __init__(self) -> None:
        streams = anyio.create_memory_object_stream[_Delivery](0)
        self._send: MemoryObjectSendStream[_Delivery] = streams[0]
        self._receive: MemoryObjectReceiveStream[_Delivery] = streams[1]
        self._current: _Delivery | None = None

    async def deliver(self, messages: list[ReceivedMessage[Any]]) -> None:
        """From a worker: hand ``messages`` to the iterating task, one after the other, and
        return once each is settled (how: its settlement says) or raise :class:`Abandoned`."""
        for message in messages:
            delivery = _Delivery(message)
            if message.settlement is not None:
                message.settlement.on_settled = lambda _s, d=delivery: self._settled(d)
            try:
                await self._send.send(delivery)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                raise Abandoned from None
            await delivery.done.wait()
            if delivery.abandoned:
                raise Abandoned

    def _settled(self, delivery: _Delivery) -> None:
        """``ack``/``nack`` on the message: its delivery ends now."""
        if self._current is delivery:
            self._current = None
        delivery.done.set()

    async def next(self) -> ReceivedMessage[Any]:
        """The next message (the previous one is consumed now); ``StopAsyncIteration`` once
        the consumer stopped."""
        if self._current is not None:
            self._current.done.set()
            self._current = None
        try:
            delivery = await self._receive.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None
        self._current = delivery
        return delivery.message

    def reconsume_later(self, message: MessageExt, delay: Delay | None = None) -> None:
        """``message.nack(delay)``: only the message the iteration is on, once."""
        if not isinstance(message, ReceivedMessage) or message.settlement is None:
            raise ConfigError("only the message the iteration is on can be handed back")
        if delay is not None:
            Settlement.check_delay(delay)
        message.nack(delay)

    def close(self) -> None:
        """No more deliveries; the message ``async for`` is on stays unconsumed."""
        self._receive.close()
        if self._current is not None:
            self._current.abandoned = True
            self._current.done.set()
            self._current = None

    def dispose(self) -> None:
        self.close()
        self._send.close()
