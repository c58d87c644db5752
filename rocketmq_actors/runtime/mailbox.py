"""Bounded mailboxes: an actor's inbox, fed by any number of senders."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Generic, TypeVar

import anyio
import attrs
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

__all__ = ["Mailbox", "MailboxClosed", "MailboxFull", "MailboxStatistics"]

T = TypeVar("T")


class MailboxFull(Exception):
    """``post_nowait`` on a full mailbox (the sender should shed or answer "busy")."""


class MailboxClosed(MailboxFull):
    """The owner closed the mailbox: nothing more is delivered."""


@attrs.frozen
class MailboxStatistics:
    name: str
    capacity: int
    queued: int
    senders: int
    delivered: int
    rejected: int


class Mailbox(Generic[T]):
    """A bounded inbox. Senders get their own clone (:meth:`sender`) so the mailbox closes for
    the receiver only when the owner closes it; the owner iterates it with ``async for``."""

    def __init__(self, name: str, capacity: int = 256) -> None:
        if capacity < 1:
            raise ValueError("a mailbox needs a capacity of at least 1")
        self.name = name
        self.capacity = capacity
        send, receive = anyio.create_memory_object_stream[T](capacity)
        self._send: MemoryObjectSendStream[T] = send
        self._receive: MemoryObjectReceiveStream[T] = receive
        self._delivered = 0
        self._rejected = 0

    def sender(self) -> MemoryObjectSendStream[T]:
        """A sending end for one producer of messages; close it when done."""
        return self._send.clone()

    async def post(self, item: T) -> None:
        """Deliver, waiting while the mailbox is full (backpressure)."""
        await self._send.send(item)
        self._delivered += 1

    def post_nowait(self, item: T) -> None:
        """Deliver now or raise :class:`MailboxFull` (for senders that must not block)."""
        try:
            self._send.send_nowait(item)
        except anyio.WouldBlock:
            self._rejected += 1
            raise MailboxFull(self.name) from None
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._rejected += 1
            raise MailboxClosed(self.name) from None
        self._delivered += 1

    async def receive(self) -> T:
        return await self._receive.receive()

    async def __aiter__(self) -> AsyncIterator[T]:
        async for item in self._receive:
            yield item

    def close(self) -> None:
        """No more deliveries; the receiver drains what is queued, then iteration ends."""
        self._send.close()

    def dispose(self) -> None:
        """Close both ends (after the owner's receive loop has ended); queued items are dropped."""
        self._send.close()
        self._receive.close()

    def statistics(self) -> MailboxStatistics:
        stats = self._send.statistics()
        return MailboxStatistics(
            name=self.name,
            capacity=self.capacity,
            queued=stats.current_buffer_used,
            senders=stats.open_send_streams,
            delivered=self._delivered,
            rejected=self._rejected,
        )
