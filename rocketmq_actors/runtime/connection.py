"""One TCP (optionally TLS) connection to a NameServer or broker, as an actor.

The bytes move on a :class:`~rocketmq_actors.runtime.wire.Wire`: every received chunk is fed to
the sans-IO :class:`FrameDecoder`, responses complete pending requests by opaque and
broker-initiated requests go to ``on_request``; frames queued in one loop turn leave in one
write. ``serve()`` lasts as long as the connection (plus a deadline watcher). Callers use
:meth:`request` and :meth:`oneway`; an in-flight cap by count and by bytes makes them wait
(backpressure), never fail. When the connection dies - peer close, bad frame, I/O error, or
cancellation - every pending request fails at once with :class:`ConnectionLost`, its
``__cause__`` the reason. A request that gets no answer within its timeout closes the
connection too (:data:`CLOSE_AFTER_TIMEOUT`), as the Java client does.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Callable
from typing import Any, overload

import anyio
import anyio.abc

from rocketmq_actors.errors import (
    ClientClosed,
    ConfigError,
    ConnectError,
    ConnectionLost,
    RequestTimeout,
    WriteTimeout,
    unwrap_group,
)
from rocketmq_actors.logs import get_logger
from rocketmq_actors.metrics import METRICS
from rocketmq_actors.protocol.acl import AclCredentials, sign
from rocketmq_actors.protocol.addresses import parse_addr
from rocketmq_actors.protocol.codes import HELD_REQUESTS
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.protocol.errors import ProtocolError
from rocketmq_actors.protocol.framing import FrameDecoder

from .tree import Node
from .waiters import Clock, Completion, DeadlineWatcher, Pending, Waiter, waiter_factory
from .wire import HIGH_WATER, ConnectionClosedByPeer, StreamWire, Wire, open_wire

__all__ = ["MAX_IN_FLIGHT", "BrokerConnection", "ConnectionClosedByPeer", "connect"]

log = get_logger("rocketmq_actors.runtime")

RequestHandler = Callable[["BrokerConnection", RemotingCommand], None]

#: how long a one-way frame may wait for a peer that stopped reading
WRITE_TIMEOUT = 3.0
#: slots of a connection: the requests that may be in flight on it at once (the Java client's
#: clientAsyncSemaphoreValue). A consumer holds one per queue it pulls from a broker (the
#: broker holds each pull until a message arrives), so this is also how many queues of one
#: broker a client can pull from without some of them waiting for a slot
MAX_IN_FLIGHT = 65535
#: a request that had at least this long (seconds) and got no answer closes its connection,
#: as the Java client's invokeSync does (clientCloseSocketIfTimeout, MIN_CLOSE_TIMEOUT_MILLIS):
#: a peer that stopped answering - a partition, a half-open connection - is dialled afresh,
#: instead of waiting out TCP's retransmission back-off once it is back. Held requests
#: (long-polled pulls and pops: Java's invokeAsync) leave it open
CLOSE_AFTER_TIMEOUT = 0.1


def split_addr(addr: str) -> tuple[str, int]:
    """``(host, port)``, or :class:`ConfigError` (a ``ValueError``) for a malformed address."""
    try:
        return parse_addr(addr)
    except ProtocolError as exc:
        raise ConfigError(f"address {addr!r} is not host:port") from exc


async def connect(
    addr: str, *, timeout: float = 3.0, ssl_context: ssl.SSLContext | None = None
) -> Wire:
    """Open a wire to ``addr`` within ``timeout`` or raise :class:`ConnectError`."""
    try:
        host, port = parse_addr(addr)
    except ProtocolError as exc:
        error = ConnectError(addr, str(exc))
        error.retriable = False  # the same address will never work
        raise error from None
    try:
        with anyio.fail_after(timeout):
            return await open_wire(host, port, ssl_context)
    except TimeoutError:
        raise ConnectError(addr, f"no connection within {timeout}s") from None
    except socket.gaierror as exc:
        error = ConnectError(addr, f"{host!r} does not resolve: {exc.strerror or exc}")
        error.retriable = exc.errno == socket.EAI_AGAIN  # only "try again later" may pass
        raise error from exc
    except (OSError, ssl.SSLError) as exc:
        raise ConnectError(addr, str(exc) or type(exc).__name__) from exc


class BrokerConnection:
    """A connected peer. Create it with a connected wire (from :func:`connect`) or any anyio
    byte stream, then run :meth:`serve`."""

    def __init__(
        self,
        addr: str,
        stream: Wire | anyio.abc.ByteStream,
        *,
        on_request: RequestHandler | None = None,
        max_in_flight: int = MAX_IN_FLIGHT,
        max_in_flight_bytes: int = 64 * 1024 * 1024,
        credentials: AclCredentials | None = None,
        close_after_timeout: float = CLOSE_AFTER_TIMEOUT,
    ) -> None:
        self.addr = addr
        self._close_after_timeout = close_after_timeout  # (math.inf: timeouts leave it open)
        self._wire = stream if isinstance(stream, Wire) else StreamWire(stream)
        self._wire.bind(self._on_data)
        self._credentials = credentials
        self._on_request = on_request
        self._decoder = FrameDecoder()
        self._pending: dict[int, Pending] = {}
        self._new_waiter: Callable[[], Waiter] | None = None
        self._clock: Clock = anyio.current_time
        self._deadlines = DeadlineWatcher(self._pending, self._expire)
        self._next_opaque = 0
        self._max_in_flight = max_in_flight
        self._max_bytes = max_in_flight_bytes
        self._in_flight = 0
        self._in_flight_bytes = 0
        self._capacity_freed = anyio.Event()
        self._capacity_waiters = 0
        # requests wait (then fail) while more than this waits to be written to a peer that
        # stopped reading: timed-out requests free their slots, not their queued bytes
        self._max_unwritten = max(max_in_flight_bytes, 2 * HIGH_WATER)
        self._closed: BaseException | None = None
        self.requests_sent = 0
        #: the peer has answered a request on this connection
        self.answered = False
        #: called once, at the first answer (the pool's: a broker serving again)
        self.on_first_answer: Callable[[], None] | None = None

    # ---- state -----------------------------------------------------------------------------

    @property
    def is_open(self) -> bool:
        return self._closed is None

    @property
    def pending(self) -> int:
        return len(self._pending)

    def describe(self) -> Node:
        return Node(name=f"connection[{self.addr}]", kind="connection",
                    state="running" if self._closed is None else "closing",
                    info={"pending": len(self._pending), "tls": self._wire.tls})  # fmt: skip

    def statistics(self) -> dict[str, Any]:
        return {
            "addr": self.addr,
            "open": self.is_open,
            "tls": self._wire.tls,
            "pending": len(self._pending),
            "in_flight_bytes": self._in_flight_bytes,
            "requests_sent": self.requests_sent,
            "writes": self._wire.writes,
            "bytes_written": self._wire.bytes_written,
        }

    # ---- running ---------------------------------------------------------------------------

    async def serve(self) -> None:
        """Serve until the connection dies; then fail what is pending.

        Returns normally after :meth:`close`; raises the reason otherwise (for the supervisor).
        Cancellation from outside propagates unchanged.
        """
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._deadlines.run)
                await self._wire.run()
                tg.cancel_scope.cancel()
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
                await self._wire.aclose()
            log.info("connection.closed", addr=self.addr, reason=repr(self._closed))
            METRICS.inc("rocketmq_client_connections_closed_total", addr=self.addr)

    def close(self) -> None:
        """Stop serving once the frames already queued are written (one-way requests such as
        offset commits and END_TRANSACTION have nothing else to deliver them); pending
        requests fail with :class:`ConnectionLost`."""
        if self._closed is None:
            self._closed = ClientClosed(f"connection to {self.addr} closed")
        self._wire.close()

    def _fail_pending(self, reason: BaseException) -> None:
        pending, self._pending = self._pending, {}
        self._deadlines.rebind(self._pending)
        for waiter, *_ in pending.values():
            error = ConnectionLost(self.addr, str(reason) or type(reason).__name__)
            error.__cause__ = reason
            if not waiter.done():
                waiter.set_exception(error)
        self._capacity_freed.set()

    def _expire(self, opaque: int, entry: Pending) -> None:
        waiter, _, code, timeout = entry
        if waiter.done():
            return
        waiter.set_exception(RequestTimeout(self.addr, code, timeout))
        closes = timeout >= self._close_after_timeout and code not in HELD_REQUESTS
        if closes and self._closed is None:
            # the others in flight fail with ConnectionLost (its cause this timeout); the
            # connection's supervisor dials again
            log.warning("connection.closed_after_timeout", addr=self.addr, code=code,
                        timeout=timeout, pending=len(self._pending))  # fmt: skip
            self._closed = reason = RequestTimeout(self.addr, code, timeout)
            self._wire.abort(reason)

    def _on_data(self, chunk: bytes | memoryview) -> None:
        """Every chunk read: complete requests by opaque, route the peer's requests."""
        try:
            commands = self._decoder.feed(chunk)
        except ProtocolError as exc:
            log.warning("connection.protocol_error", addr=self.addr, reason=exc.reason,
                        detail=exc.detail)  # fmt: skip
            raise
        pending = self._pending
        woke = False
        for cmd in commands:
            if cmd.flag & 1:  # response
                entry = pending.pop(cmd.opaque, None)
                if entry is not None and not (waiter := entry[0]).done():
                    waiter.set_result(cmd)
                    woke = True
                else:
                    log.debug("connection.response.unmatched", addr=self.addr,
                              opaque=cmd.opaque, code=cmd.code)  # fmt: skip
            elif self._on_request is not None:
                self._on_request(self, cmd)
            elif not cmd.is_oneway:
                self.send_response(cmd.response(3, remark="no request handler"))
        if woke:  # their next requests leave in the loop turn they are written
            self._wire.flush_after_woken()
            if not self.answered:
                self._answered()

    def _answered(self) -> None:
        self.answered = True
        told, self.on_first_answer = self.on_first_answer, None
        if told is not None:
            told()

    # ---- requests --------------------------------------------------------------------------

    def _enqueue(self, frame: bytes, alone: bool = False) -> None:
        """Queue ``frame``; ``alone`` (a request with no other in flight: no batch to wait
        for) lets it leave at once."""
        wire = self._wire
        if wire.closing:
            raise ClientClosed(f"connection to {self.addr} is closing")
        if alone:
            wire.write_now(frame)
        else:
            wire.write(frame)

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

    async def _writable(self, limit: int, timeout: float) -> None:
        """Backpressure for a peer that stops reading: wait, up to ``timeout``, while more
        than ``limit`` bytes wait to be written; then :class:`WriteTimeout` (nothing sent)."""
        wire = self._wire
        with anyio.move_on_after(timeout):
            while self._closed is None and wire.paused and wire.buffered > limit:
                await wire.drain()
            if self._closed is not None:  # (closed meanwhile: retriable, as any lost one)
                raise ConnectionLost(self.addr, str(self._closed)) from self._closed
            return
        raise WriteTimeout(self.addr, timeout)

    def finish(self, opaque: int, waiter: Completion, size: int) -> None:
        """End a request begun with :meth:`start_encoded` (answered, failed or cancelled): its
        slot and bytes are free again."""
        # The caller may have been cancelled (asyncio then cancels the awaited future too):
        # drop our entry whatever the waiter's state, so a late response finds nothing.
        entry = self._pending.get(opaque)
        if entry is not None and entry[0] is waiter:
            del self._pending[opaque]
        # the slot and its bytes are free again
        self._in_flight -= 1
        self._in_flight_bytes -= size
        if self._capacity_waiters:
            self._capacity_freed.set()

    async def request(
        self, cmd: RemotingCommand, timeout: float, *, slot: bool = False
    ) -> RemotingCommand:
        """Send ``cmd`` (a new opaque is assigned) and return its response. ``slot``: the
        request takes one of the connection's slots, waiting for one while all are taken (a
        pull, a pop: requests the peer may hold). Without it, it is admitted whatever the
        slots (a heartbeat, an offset lookup or commit, an admin call): a consumer whose held
        pulls take every slot must still heartbeat and start queues, or the broker drops it as
        silent (the Java client's synchronous calls take no semaphore either)."""

        def encode(opaque: int) -> bytes:
            cmd.opaque = opaque
            if self._credentials is not None:
                cmd.ext_fields = sign(cmd.ext_fields, cmd.body, self._credentials)
            return cmd.encode()

        return await self.request_encoded(cmd.code, encode, timeout, len(cmd.body), slot=slot)

    async def request_encoded(
        self,
        code: int,
        encode: Callable[[int], bytes],
        timeout: float,
        size_hint: int = 0,
        *,
        slot: bool = True,
    ) -> RemotingCommand:
        """Like :meth:`request` for a caller that builds the frame itself from an opaque
        (the producer's pre-rendered send frames; with ACL, the encoder signs them)."""
        while (started := self.start_encoded(code, encode, timeout, size_hint, slot=slot)) is None:
            await self._until_admitted(size_hint, timeout, slot=slot)
        opaque, waiter = started
        try:
            result: RemotingCommand = await waiter
            return result
        finally:
            self.finish(opaque, waiter, size_hint)

    async def _until_admitted(self, size: int, timeout: float, *, slot: bool = True) -> None:
        """Wait until :meth:`start_encoded` takes a request of ``size`` bytes: a free slot
        (:class:`ConnectionLost` once the connection is closed), then a peer that reads."""
        if self._closed is not None or (slot and not self._has_capacity(size)):
            await self._wait_for_capacity(size)
        if self._wire.paused:
            await self._writable(self._max_unwritten, timeout)

    @overload
    def start_encoded(
        self,
        code: int,
        encode: Callable[[int], bytes],
        timeout: float,
        size_hint: int = 0,
        *,
        slot: bool = True,
    ) -> tuple[int, Waiter] | None: ...

    @overload
    def start_encoded(
        self,
        code: int,
        encode: Callable[[int], bytes],
        timeout: float,
        size_hint: int,
        completion: Completion,
        *,
        slot: bool = True,
    ) -> tuple[int, Completion] | None: ...

    def start_encoded(
        self,
        code: int,
        encode: Callable[[int], bytes],
        timeout: float,
        size_hint: int = 0,
        completion: Completion | None = None,
        *,
        slot: bool = True,
    ) -> tuple[int, Completion] | None:
        """Start a request: its frame queued and ``(opaque, waiter)`` returned, or None, with
        nothing done, when it would have to wait first (no free slot, a peer that stopped
        reading, or the connection is gone). :meth:`request_encoded` is this and the wait; a
        caller on a path that runs once per message calls it itself and awaits the waiter
        (one coroutine frame less). With ``completion``, that object is completed instead of
        a new waiter: from the reader, as the answer arrives (no task to wake, no callback to
        schedule). ``slot=False``: admitted whatever the slots (see :meth:`request`). Every
        started request is ended with :meth:`finish`."""
        wire = self._wire
        in_flight_bytes = self._in_flight_bytes
        if (  # (_has_capacity and _writable's checks, inlined: a call less each)
            self._closed is not None  # (closing implies closed: close() sets it first)
            or (
                slot
                and (
                    self._in_flight >= self._max_in_flight
                    or (in_flight_bytes and in_flight_bytes + size_hint > self._max_bytes)
                )
            )
            or (wire.paused and wire.buffered > self._max_unwritten)
        ):
            return None
        self._in_flight += 1
        self._in_flight_bytes = in_flight_bytes + size_hint
        new_waiter = self._new_waiter
        if new_waiter is None:  # a request may arrive before serve() first runs
            new_waiter, self._clock = waiter_factory()
            self._new_waiter = new_waiter
        opaque = self._take_opaque()
        waiter = new_waiter() if completion is None else completion
        deadline = self._clock() + timeout
        self._pending[opaque] = (waiter, deadline, code, timeout)
        self._deadlines.track(deadline)
        try:
            frame = encode(opaque)
            if len(self._pending) == 1:
                wire.write_now(frame)
            else:
                wire.write(frame)
        except BaseException:
            self.finish(opaque, waiter, size_hint)
            raise
        self.requests_sent += 1
        return opaque, waiter

    async def oneway(self, cmd: RemotingCommand, timeout: float = WRITE_TIMEOUT) -> None:
        """Send without waiting for (or expecting) a response; :class:`WriteTimeout` if the
        peer takes no bytes for ``timeout`` seconds."""
        size = len(cmd.body)
        if self._closed is not None or not self._has_capacity(size):
            await self._wait_for_capacity(size)
        if self._wire.paused:  # one-way frames hold no in-flight slot: bound them here
            await self._writable(0, timeout)
        cmd.opaque = self._take_opaque()
        cmd.flag |= 0x2
        if self._credentials is not None:
            cmd.ext_fields = sign(cmd.ext_fields, cmd.body, self._credentials)
        self._enqueue(cmd.encode())
        self.requests_sent += 1

    async def oneway_encoded(
        self, encode: Callable[[int], bytes], size_hint: int = 0, timeout: float = WRITE_TIMEOUT
    ) -> None:
        """Like :meth:`oneway` for a pre-rendered frame (the encoder must set the oneway flag)."""
        if self._closed is not None or not self._has_capacity(size_hint):
            await self._wait_for_capacity(size_hint)
        if self._wire.paused:
            await self._writable(0, timeout)
        self._enqueue(encode(self._take_opaque()))
        self.requests_sent += 1

    def send_response(self, response: RemotingCommand) -> None:
        """Queue a reply to a broker-initiated request (never blocks)."""
        if self._closed is None:
            self._enqueue(response.encode())
