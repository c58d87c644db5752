"""``async for message in consumer``: messages handed to the iterating task one at a time.

A worker that would call a handler hands its message over a zero-capacity stream instead and
waits: the message counts as consumed when the loop asks for the next one, as a failure when
it is given back with :meth:`Deliveries.reconsume_later`, and as not consumed (its offset not
committed, so it is delivered again) when the consumer stops first.
"""

from __future__ import annotations

import anyio
import attrs
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from rocketmq_actors.errors import ConfigError
from rocketmq_actors.protocol.records import MessageExt

__all__ = ["Abandoned", "Deliveries", "ReconsumeLater"]


class ReconsumeLater(Exception):
    """An iterated message was handed back with ``reconsume_later``."""


class Abandoned(Exception):
    """The consumer stopped while a message waited for (or was in) ``async for``: it is left
    unconsumed (its offset is not committed), so it is delivered again later."""


@attrs.define(eq=False)
class _Delivery:
    message: MessageExt
    done: anyio.Event = attrs.field(factory=anyio.Event)
    failed: bool = False
    abandoned: bool = False


class Deliveries:
    def __init__(self) -> None:
        streams = anyio.create_memory_object_stream[_Delivery](0)
        self._send: MemoryObjectSendStream[_Delivery] = streams[0]
        self._receive: MemoryObjectReceiveStream[_Delivery] = streams[1]
        self._current: _Delivery | None = None

    async def deliver(self, messages: list[MessageExt]) -> None:
        """From a worker: hand ``messages`` to the iterating task, one after the other, and
        return once they are consumed (raise :class:`ReconsumeLater` or :class:`Abandoned`)."""
        for message in messages:
            delivery = _Delivery(message)
            try:
                await self._send.send(delivery)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                raise Abandoned from None
            await delivery.done.wait()
            if delivery.abandoned:
                raise Abandoned
            if delivery.failed:
                raise ReconsumeLater

    async def next(self) -> MessageExt:
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

    def reconsume_later(self, message: MessageExt) -> None:
        if self._current is None or self._current.message is not message:
            raise ConfigError("only the message the iteration is on can be handed back")
        self._current.failed = True
        self._current.done.set()
        self._current = None

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
