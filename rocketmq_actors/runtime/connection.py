"""One TCP (optionally TLS) connection to a NameServer or broker, as an actor.

``serve()`` runs two tasks: a reader that feeds the sans-IO :class:`FrameDecoder` and completes
pending requests by opaque (or hands broker-initiated requests to ``on_request``), and a writer
that coalesces every frame queued since its last write into one ``send``. Callers use
:meth:`request` and :meth:`oneway`; an in-flight cap by count and by bytes makes them wait
(backpressure), never fail. When the connection dies - peer close, bad frame, I/O error, or
cancellation - every pending request fails at once with :class:`ConnectionLost`, its
``__cause__`` the reason.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from typing import Any

import anyio
import anyio.abc
import structlog
from anyio.streams.tls import TLSAttribute

from rocketmq_actors.errors import (
    ClientClosed,
    ConnectError,
    ConnectionLost,
    RequestTimeout,
    unwrap_group,
)
from rocketmq_actors.metrics import METRICS
from rocketmq_actors.protocol.acl import AclCredentials, sign
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.protocol.errors import ProtocolError
from rocketmq_actors.protocol.framing import FrameDecoder

from .waiters import Clock, DeadlineWatcher, Waiter, waiter_factory

__all__ = ["BrokerConnection", "ConnectionClosedByPeer", "connect"]

log = structlog.get_logger("rocketmq_actors.runtime")

RequestHandler = Callable[["BrokerConnection", RemotingCommand], None]


class ConnectionClosedByPeer(Exception):
    """The server closed the connection."""


def split_addr(addr: str) -> tuple[str, int]:
    host, sep, port = addr.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"address {addr!r} is not host:port")
    return host.strip("[]"), int(port)


async def connect(
    addr: str, *, timeout: float = 3.0, ssl_context: ssl.SSLContext | None = None
) -> anyio.abc.ByteStream:
    """Open a stream to ``addr`` within ``timeout`` or raise :class:`ConnectError`."""
    host, port = split_addr(addr)
    try:
        with anyio.fail_after(timeout):
            if ssl_context is None:
                return await anyio.connect_tcp(host, port)
            return await anyio.connect_tcp(
                host, port, ssl_context=ssl_context, tls_standard_compatible=False
            )
    except TimeoutError:
        raise ConnectError(addr, f"no connection within {timeout}s") from None
    except (OSError, ssl.SSLError) as exc:
        raise ConnectError(addr, str(exc) or type(exc).__name__) from exc


class BrokerConnection:
    """A connected peer. Create it with a connected stream, then run :meth:`serve`."""

    def __init__(
        self,
        addr: str,
        stream: anyio.abc.ByteStream,
        *,
        on_request: RequestHandler | None = None,
        max_in_flight: int = 4096,
        max_in_flight_bytes: int = 64 * 1024 * 1024,
        credentials: AclCredentials | None = None,
    ) -> None:
        self.addr = addr
        self._stream = stream
        self._credentials = credentials
        self._on_request = on_request
        self._decoder = FrameDecoder()
        self._pending: dict[int, Waiter] = {}
        self._new_waiter: Callable[[], Waiter] | None = None
        self._clock: Clock = anyio.current_time
        self._deadlines = DeadlineWatcher(self._pending, self._expire)
        self._next_opaque = 0
        self._outbox: list[bytes] = []
        self._outbox_ready = anyio.Event()
        self._max_in_flight = max_in_flight
        self._max_bytes = max_in_flight_bytes
        self._in_flight = 0
        self._in_flight_bytes = 0
        self._capacity_freed = anyio.Event()
        self._capacity_waiters = 0
        self._closed: BaseException | None = None
        self._close_when_flushed = False
        self._scope: anyio.CancelScope | None = None
        self.requests_sent = 0
        self.bytes_written = 0
        self.writes = 0

    # ---- state -----------------------------------------------------------------------------

    @property
    def is_open(self) -> bool:
        return self._closed is None

    @property
    def pending(self) -> int:
        return len(self._pending)

    def statistics(self) -> dict[str, Any]:
        return {
            "addr": self.addr,
            "open": self.is_open,
            "tls": self._stream.extra(TLSAttribute.ssl_object, None) is not None,
            "pending": len(self._pending),
            "in_flight_bytes": self._in_flight_bytes,
            "requests_sent": self.requests_sent,
            "writes": self.writes,
            "bytes_written": self.bytes_written,
        }

    # ---- running ---------------------------------------------------------------------------

    async def serve(self) -> None:
        """Run the reader and writer until the connection dies; then fail what is pending.

        Returns normally after :meth:`close`; raises the reason otherwise (for the supervisor).
        Cancellation from outside propagates unchanged.
        """
        try:
            with anyio.CancelScope() as self._scope:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(self._writer)
                    tg.start_soon(self._deadlines.run)
                    await self._reader()
        except Exception as exc:
            reason = unwrap_group(exc)
            if self._closed is None:
                self._closed = reason
            raise reason from None
        finally:
            if self._closed is None:  # cancelled from outside, or close()
                self._closed = ClientClosed(f"connection to {self.addr} closed")
            self._fail_pending(self._closed)
            with anyio.CancelScope(shield=True):
                await self._stream.aclose()
            log.info("connection.closed", addr=self.addr, reason=repr(self._closed))
            METRICS.inc("rocketmq_connections_closed_total", addr=self.addr)

    def close(self) -> None:
        """Stop serving once the frames already queued are written (one-way requests such as
        offset commits and END_TRANSACTION have nothing else to deliver them); pending
        requests fail with :class:`ConnectionLost`."""
        if self._closed is None:
            self._closed = ClientClosed(f"connection to {self.addr} closed")
        if self._outbox:
            self._close_when_flushed = True  # the writer cancels after its last send
        elif self._scope is not None:
            self._scope.cancel()

    def _fail_pending(self, reason: BaseException) -> None:
        pending, self._pending = self._pending, {}
        self._deadlines.rebind(self._pending)
        for waiter in pending.values():
            error = ConnectionLost(self.addr, str(reason) or type(reason).__name__)
            error.__cause__ = reason
            if not waiter.done():
                waiter.set_exception(error)
        self._capacity_freed.set()

    def _expire(self, opaque: int, waiter: Waiter) -> None:
        if not waiter.done():
            waiter.set_exception(RequestTimeout(self.addr, waiter.code, waiter.timeout))

    async def _reader(self) -> None:
        receive = self._stream.receive
        feed = self._decoder.feed
        pending = self._pending
        try:
            while True:
                try:
                    chunk = await receive(262144)
                except (anyio.EndOfStream, anyio.BrokenResourceError):
                    raise ConnectionClosedByPeer(f"{self.addr} closed the connection") from None
                for cmd in feed(chunk):
                    if cmd.flag & 1:  # response
                        waiter = pending.pop(cmd.opaque, None)
                        if waiter is not None and not waiter.done():
                            waiter.set_result(cmd)
                        else:
                            log.debug("connection.response.unmatched", addr=self.addr,
                                      opaque=cmd.opaque, code=cmd.code)  # fmt: skip
                    elif self._on_request is not None:
                        self._on_request(self, cmd)
                    elif not cmd.is_oneway:
                        self.send_response(cmd.response(3, remark="no request handler"))
        except ProtocolError as exc:
            log.warning("connection.protocol_error", addr=self.addr, reason=exc.reason,
                        detail=exc.detail)  # fmt: skip
            raise

    async def _writer(self) -> None:
        send = self._stream.send
        while True:
            await self._outbox_ready.wait()
            self._outbox_ready = anyio.Event()
            frames, self._outbox = self._outbox, []
            data = frames[0] if len(frames) == 1 else b"".join(frames)
            self.writes += 1
            self.bytes_written += len(data)
            await send(data)
            if self._close_when_flushed and not self._outbox and self._scope is not None:
                self._scope.cancel()

    # ---- requests --------------------------------------------------------------------------

    def _enqueue(self, frame: bytes) -> None:
        if self._close_when_flushed:
            raise ClientClosed(f"connection to {self.addr} is closing")
        self._outbox.append(frame)
        if len(self._outbox) == 1:  # the writer is (or will be) waiting for the first frame
            self._outbox_ready.set()

    def _take_opaque(self) -> int:
        opaque = self._next_opaque
        self._next_opaque = (opaque + 1) & 0x7FFFFFFF
        return opaque

    def _has_capacity(self, size: int) -> bool:
        return self._in_flight < self._max_in_flight and (
            not self._in_flight_bytes or self._in_flight_bytes + size <= self._max_bytes
        )

    async def _wait_for_capacity(self, size: int) -> None:
        """Backpressure: wait until a slot (and room for ``size`` bytes) is free."""
        self._capacity_waiters += 1
        try:
            while self._closed is None and not self._has_capacity(size):
                if self._capacity_freed.is_set():
                    self._capacity_freed = anyio.Event()
                await self._capacity_freed.wait()
        finally:
            self._capacity_waiters -= 1
        if self._closed is not None:
            raise ConnectionLost(self.addr, str(self._closed)) from self._closed

    def _release(self, size: int) -> None:
        self._in_flight -= 1
        self._in_flight_bytes -= size
        if self._capacity_waiters:
            self._capacity_freed.set()

    def _new_request_waiter(self, code: int, timeout: float) -> tuple[int, Waiter]:
        """Take a slot's opaque and register its waiter (the slot is already held)."""
        new_waiter = self._new_waiter
        if new_waiter is None:  # a request may arrive before serve() first runs
            new_waiter, self._clock = waiter_factory()
            self._new_waiter = new_waiter
        opaque = self._take_opaque()
        waiter = new_waiter()
        waiter.code = code
        waiter.timeout = timeout
        waiter.deadline = deadline = self._clock() + timeout
        self._pending[opaque] = waiter
        self._deadlines.track(deadline)
        return opaque, waiter

    def _forget(self, opaque: int, waiter: Waiter, size: int) -> None:
        # The caller may have been cancelled (asyncio then cancels the awaited future too):
        # drop our entry whatever the waiter's state, so a late response finds nothing.
        if self._pending.get(opaque) is waiter:
            del self._pending[opaque]
        self._release(size)

    async def request(self, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        """Send ``cmd`` (a new opaque is assigned) and return its response."""
        size = len(cmd.body)
        if self._closed is not None or not self._has_capacity(size):
            await self._wait_for_capacity(size)
        self._in_flight += 1
        self._in_flight_bytes += size
        opaque, waiter = self._new_request_waiter(cmd.code, timeout)
        try:
            cmd.opaque = opaque
            if self._credentials is not None:
                cmd.ext_fields = sign(cmd.ext_fields, cmd.body, self._credentials)
            self._enqueue(cmd.encode())
            self.requests_sent += 1
            result: RemotingCommand = await waiter
            return result
        finally:
            self._forget(opaque, waiter, size)

    async def request_encoded(
        self, code: int, encode: Callable[[int], bytes], timeout: float, size_hint: int = 0
    ) -> RemotingCommand:
        """Like :meth:`request` for a caller that builds the frame itself from an opaque
        (the producer's pre-rendered send frames; with ACL, the encoder signs them)."""
        if self._closed is not None or not self._has_capacity(size_hint):
            await self._wait_for_capacity(size_hint)
        self._in_flight += 1
        self._in_flight_bytes += size_hint
        opaque, waiter = self._new_request_waiter(code, timeout)
        try:
            self._enqueue(encode(opaque))
            self.requests_sent += 1
            result: RemotingCommand = await waiter
            return result
        finally:
            self._forget(opaque, waiter, size_hint)

    async def oneway(self, cmd: RemotingCommand) -> None:
        """Send without waiting for (or expecting) a response."""
        size = len(cmd.body)
        if self._closed is not None or not self._has_capacity(size):
            await self._wait_for_capacity(size)
        cmd.opaque = self._take_opaque()
        cmd.flag |= 0x2
        if self._credentials is not None:
            cmd.ext_fields = sign(cmd.ext_fields, cmd.body, self._credentials)
        self._enqueue(cmd.encode())
        self.requests_sent += 1

    async def oneway_encoded(self, encode: Callable[[int], bytes], size_hint: int = 0) -> None:
        """Like :meth:`oneway` for a pre-rendered frame (the encoder must set the oneway flag)."""
        if self._closed is not None or not self._has_capacity(size_hint):
            await self._wait_for_capacity(size_hint)
        self._enqueue(encode(self._take_opaque()))
        self.requests_sent += 1

    def send_response(self, response: RemotingCommand) -> None:
        """Queue a reply to a broker-initiated request (never blocks)."""
        if self._closed is None:
            self._enqueue(response.encode())
