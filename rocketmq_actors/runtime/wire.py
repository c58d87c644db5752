"""The byte pipe under a :class:`~rocketmq_actors.runtime.connection.BrokerConnection`.

A wire moves frames and nothing else: ``write`` queues a frame (never blocks; frames queued in
one event-loop turn leave in one write), received chunks go to the ``on_data`` callback the
connection binds, and ``run`` lasts as long as the connection does. Two implementations:

* :class:`AsyncioWire` (the default under asyncio): an ``asyncio.BufferedProtocol`` on the
  loop's own transport. Bytes are received into one preallocated buffer and decoded there, and
  queued frames leave from one ``call_soon`` callback (a request alone in flight at once), so a
  request costs no task switch on either side of the socket.
  Against a real broker its sync round trip is shorter and its 256-in-flight throughput higher
  than the stream wire's (benchmarks/roundtrip.py, benchmarks/paired.py).
* :class:`StreamWire`: any anyio byte stream, with a reader and a writer task (other anyio
  backends, and streams built by the caller).
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable

import anyio
import anyio.abc
from anyio.streams.tls import TLSAttribute

__all__ = ["AsyncioWire", "ConnectionClosedByPeer", "StreamWire", "Wire", "open_wire"]

DataHandler = Callable[[bytes | memoryview], None]  # a memoryview is valid only during the call


class ConnectionClosedByPeer(Exception):
    """The server closed the connection."""


class Wire:
    """Interface of a frame pipe (see the module docstring)."""

    tls: bool = False

    def __init__(self) -> None:
        self._outbox: list[bytes] = []  # frames queued since the last write
        self._outbox_bytes = 0
        self._closing = False
        self.writes = 0
        self.bytes_written = 0

    def _queue(self, frame: bytes) -> bool:
        """Add ``frame`` to the outbox; true if it is the first one (the writer must wake)."""
        self._outbox.append(frame)
        self._outbox_bytes += len(frame)
        return len(self._outbox) == 1

    def _take(self) -> bytes:
        """Empty the outbox into one buffer (counted as one write); ``b""`` if it was empty."""
        frames, self._outbox = self._outbox, []
        self._outbox_bytes = 0
        if not frames:
            return b""
        data = frames[0] if len(frames) == 1 else b"".join(frames)
        self.writes += 1
        self.bytes_written += len(data)
        return data

    def bind(self, on_data: DataHandler) -> None:
        """Set the receiver of every chunk read (an exception from it ends :meth:`run`)."""
        raise NotImplementedError

    def write(self, frame: bytes) -> None:
        """Queue ``frame``; it leaves with the others queued in the same loop turn."""
        raise NotImplementedError

    def write_now(self, frame: bytes) -> None:
        """Like :meth:`write`, for a frame nothing else is likely to join this turn (a request
        with none other in flight): it may leave at once instead of at the end of the turn."""
        self.write(frame)

    def flush_after_woken(self) -> None:
        """The caller has just woken tasks that are likely to write (responses completed their
        requests): what they write may leave as soon as they have run."""

    @property
    def closing(self) -> bool:
        """:meth:`close` was called: no more frames are accepted."""
        return self._closing

    @property
    def paused(self) -> bool:
        """The kernel's send buffer is full: producers of unbounded traffic should drain."""
        return False

    @property
    def buffered(self) -> int:
        """Bytes queued here (and in the transport) that the kernel has not taken yet."""
        return self._outbox_bytes

    async def drain(self) -> None:
        """Wait until :attr:`paused` is false (or the wire is gone)."""

    async def run(self) -> None:
        """Move bytes until the wire ends: return after :meth:`close`, raise
        :class:`ConnectionClosedByPeer`, an ``OSError`` or the ``on_data`` error otherwise."""
        raise NotImplementedError

    def close(self) -> None:
        """Write what is queued, then end :meth:`run` normally."""
        raise NotImplementedError

    def abort(self, reason: BaseException) -> None:
        """End :meth:`run` now, raising ``reason``; what is queued is dropped (a peer that
        stopped answering may never read it)."""
        raise NotImplementedError

    async def aclose(self) -> None:
        """Release the socket now (after :meth:`run` ended, or on cancellation)."""
        raise NotImplementedError


#: Queued-but-unwritten bytes above which a wire reports itself paused.
HIGH_WATER = 1024 * 1024


class StreamWire(Wire):
    """A wire over an anyio byte stream: a reader task and a coalescing writer task."""

    def __init__(self, stream: anyio.abc.ByteStream) -> None:
        super().__init__()
        self._stream = stream
        self._on_data: DataHandler | None = None
        self._outbox_ready = anyio.Event()
        self._taken = anyio.Event()  # the writer took the outbox (for drain)
        self._ended = False
        self._scope: anyio.CancelScope | None = None
        self._aborted: BaseException | None = None
        self.tls = stream.extra(TLSAttribute.ssl_object, None) is not None

    def bind(self, on_data: DataHandler) -> None:
        self._on_data = on_data

    @property
    def paused(self) -> bool:
        return self._outbox_bytes > HIGH_WATER and not self._ended

    async def drain(self) -> None:
        while self.paused:
            await self._taken.wait()

    def write(self, frame: bytes) -> None:
        if self._queue(frame):  # the writer is (or will be) waiting for the first frame
            self._outbox_ready.set()

    async def run(self) -> None:
        try:
            with anyio.CancelScope() as self._scope:
                if self._aborted is None and (self._outbox or not self._closing):
                    async with anyio.create_task_group() as tg:
                        tg.start_soon(self._writer)
                        await self._reader()
        finally:
            self._ended = True
            self._taken.set()
        if self._aborted is not None:
            raise self._aborted

    async def _reader(self) -> None:
        receive = self._stream.receive
        on_data = self._on_data
        assert on_data is not None, "bind() before run()"
        while True:
            try:
                chunk = await receive(262144)
            except (anyio.EndOfStream, anyio.BrokenResourceError):
                raise ConnectionClosedByPeer("the peer closed the connection") from None
            on_data(chunk)

    async def _writer(self) -> None:
        send = self._stream.send
        while True:
            await self._outbox_ready.wait()
            self._outbox_ready = anyio.Event()
            data = self._take()
            self._taken.set()
            self._taken = anyio.Event()
            await send(data)
            if self._closing and not self._outbox and self._scope is not None:
                self._scope.cancel()

    def close(self) -> None:
        self._closing = True
        if not self._outbox and self._scope is not None:
            self._scope.cancel()  # else the writer cancels after its last send

    def abort(self, reason: BaseException) -> None:
        self._closing = True
        if self._aborted is None:
            self._aborted = reason
        if self._scope is not None:
            self._scope.cancel()

    async def aclose(self) -> None:
        await self._stream.aclose()


#: Size of the buffer each connection receives into.
RECEIVE_BUFFER = 256 * 1024


class _WireProtocol(asyncio.BufferedProtocol):
    """The asyncio side of :class:`AsyncioWire`: forwards every event to it.

    Buffered: the loop receives into one preallocated buffer per connection (``recv_into``).
    A plain protocol gets a new ``bytes`` of the loop's maximum read size for every read,
    which glibc serves with an mmap/mremap/munmap round once allocations that size have
    raised its threshold: three system calls per response for a sync request.
    """

    def __init__(self) -> None:
        self.wire: AsyncioWire | None = None
        self.early: list[bytes] = []  # chunks that arrived before the wire was built
        self.lost: BaseException | None = None
        self.was_lost = False
        self._buffer = memoryview(bytearray(RECEIVE_BUFFER))

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._buffer

    def buffer_updated(self, nbytes: int) -> None:
        # the buffer is reused by the next read: the receiver copies what it keeps now
        data = self._buffer[:nbytes]
        if self.wire is None:
            self.early.append(bytes(data))
        else:
            self.wire.received(data)

    def eof_received(self) -> bool:
        return False  # close the transport; connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        self.was_lost = True
        self.lost = exc
        if self.wire is not None:
            self.wire.lost(exc)

    def pause_writing(self) -> None:
        if self.wire is not None:
            self.wire.set_paused(True)

    def resume_writing(self) -> None:
        if self.wire is not None:
            self.wire.set_paused(False)


class AsyncioWire(Wire):
    """A wire on an asyncio transport (see the module docstring)."""

    def __init__(self, transport: asyncio.Transport, protocol: _WireProtocol) -> None:
        super().__init__()
        self._transport = transport
        self._loop = asyncio.get_running_loop()
        self._on_data: DataHandler | None = None
        self._early: list[bytes] = protocol.early
        self._done: asyncio.Future[None] = self._loop.create_future()
        self._paused = False
        self._resumed: asyncio.Event | None = None
        self._flush_scheduled = False  # a _scheduled_flush callback is in the loop's queue
        self.tls = transport.get_extra_info("ssl_object") is not None
        protocol.wire = self
        if protocol.was_lost:
            self.lost(protocol.lost)

    def bind(self, on_data: DataHandler) -> None:
        self._on_data = on_data
        early, self._early = self._early, []
        for chunk in early:
            self.received(chunk)

    @property
    def paused(self) -> bool:
        return self._paused or self._outbox_bytes > HIGH_WATER

    @property
    def buffered(self) -> int:
        return self._outbox_bytes + self._transport.get_write_buffer_size()

    def write(self, frame: bytes) -> None:
        outbox = self._outbox  # (Wire._queue, inlined: this runs once per request)
        outbox.append(frame)
        self._outbox_bytes += len(frame)
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self._loop.call_soon(self._scheduled_flush)

    def write_now(self, frame: bytes) -> None:
        # An empty outbox means nothing is queued before this frame: write it straight to the
        # transport (which keeps order and buffers what the kernel does not take). This saves
        # a sync request the loop turn (and the non-blocking epoll_wait) the flush would cost.
        if self._outbox or self._transport.is_closing():
            self.write(frame)
            return
        self.writes += 1
        self.bytes_written += len(frame)
        self._transport.write(frame)

    def flush_after_woken(self) -> None:
        # The woken tasks' steps are in the loop's ready queue now; a flush queued behind them
        # runs in the same loop turn, after they have written. Queued by the first write
        # instead, it would run a turn later, after one more (non-blocking) epoll_wait.
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self._loop.call_soon(self._scheduled_flush)

    def _scheduled_flush(self) -> None:
        self._flush_scheduled = False
        self._flush()

    def _flush(self) -> None:
        if self._transport.is_closing():  # the connection is gone: so are its frames
            self._outbox.clear()
            self._outbox_bytes = 0
            return
        data = self._take()
        if data:
            self._transport.write(data)

    # ---- events from the protocol ------------------------------------------------------------

    def received(self, data: bytes | memoryview) -> None:
        if self._on_data is None:
            self._early.append(bytes(data))
            return
        if self._done.done():
            return
        try:
            self._on_data(data)
        except Exception as exc:  # a bad frame (or a handler bug): the wire ends with it
            self._finish(exc)
            self._transport.abort()

    def lost(self, exc: BaseException | None) -> None:
        if self._closing:  # close() asked for this
            self._finish(None)
        elif exc is None:
            self._finish(ConnectionClosedByPeer("the peer closed the connection"))
        else:
            error = ConnectionClosedByPeer(f"the connection failed: {exc}")
            error.__cause__ = exc
            self._finish(error)

    def set_paused(self, paused: bool) -> None:
        self._paused = paused
        if not paused and self._resumed is not None:
            self._resumed.set()
            self._resumed = None

    def _finish(self, exc: BaseException | None) -> None:
        if not self._done.done():
            if exc is None:
                self._done.set_result(None)
            else:
                self._done.set_exception(exc)
        self.set_paused(False)

    # ---- the wire interface ------------------------------------------------------------------

    async def drain(self) -> None:
        if self._outbox_bytes > HIGH_WATER:
            self._flush()  # the transport pauses us if the kernel does not take it all
        while self._paused and not self._done.done():
            if self._resumed is None:
                self._resumed = asyncio.Event()
            await self._resumed.wait()

    async def run(self) -> None:
        # shield: cancelling run() must not cancel the future (aclose() ends the transport)
        await asyncio.shield(self._done)

    def close(self) -> None:
        if self._closing:
            return
        self._closing = True
        self._flush()
        self._transport.close()  # connection_lost (and run's return) once the buffer is out

    def abort(self, reason: BaseException) -> None:
        self._closing = True
        self._finish(reason)  # (no effect if run() already ended)
        self._transport.abort()  # connection_lost follows: nothing more is written

    async def aclose(self) -> None:
        self._finish(None)  # (no effect if run() already ended)
        if not self._transport.is_closing() or self._transport.get_write_buffer_size():
            self._transport.abort()
        if self._done.done() and not self._done.cancelled():
            self._done.exception()  # retrieved: no "exception was never retrieved" warning


async def open_wire(host: str, port: int, ssl_context: ssl.SSLContext | None = None) -> Wire:
    """Connect to ``host:port``: an :class:`AsyncioWire` under asyncio, else a
    :class:`StreamWire` over ``anyio.connect_tcp``."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # not asyncio (e.g. trio under anyio)
        loop = None
    if loop is None:
        if ssl_context is None:
            return StreamWire(await anyio.connect_tcp(host, port))
        stream = await anyio.connect_tcp(
            host, port, ssl_context=ssl_context, tls_standard_compatible=False
        )
        return StreamWire(stream)
    transport, protocol = await loop.create_connection(_WireProtocol, host, port, ssl=ssl_context)
    # (no isinstance check: uvloop's transports are not asyncio.Transport subclasses)
    return AsyncioWire(transport, protocol)
