"""BrokerConnection against a loopback fake server: the faults a real broker won't produce.

Every test runs twice: on the asyncio-protocol wire that :func:`connect` opens under asyncio,
and on the task-based wire over a plain anyio stream (other backends, caller-built streams).
"""

from __future__ import annotations

import math
import socket
import struct
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from rocketmq_actors.errors import ConnectError, ConnectionLost, RequestTimeout, WriteTimeout
from rocketmq_actors.protocol.codes import RequestCode, ResponseCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.protocol.errors import ProtocolError
from rocketmq_actors.runtime import connection
from rocketmq_actors.runtime.connection import (
    BrokerConnection,
    ConnectionClosedByPeer,
    connect,
    split_addr,
)
from rocketmq_actors.runtime.wire import AsyncioWire, StreamWire, Wire
from rocketmq_actors.testing.fakeserver import FakePeer, FakeServer


def _req(code: int = RequestCode.GET_MAX_OFFSET, **ext: str) -> RemotingCommand:
    return RemotingCommand.request(code, ext)


class Running:
    """A served connection plus the outcome of its serve() task."""

    def __init__(self, conn: BrokerConnection) -> None:
        self.conn = conn
        self.error: BaseException | None = None
        self.finished = anyio.Event()

    async def serve(self) -> None:
        try:
            await self.conn.serve()
        except Exception as exc:
            self.error = exc
        finally:
            self.finished.set()


WIRE_KIND = "asyncio"


@pytest.fixture(autouse=True, params=["asyncio", "stream"])
def wire_kind(request: pytest.FixtureRequest) -> str:
    global WIRE_KIND  # noqa: PLW0603 - read by serving(), which every test uses
    WIRE_KIND = str(request.param)
    return WIRE_KIND


async def open_for_test(addr: str) -> Wire | anyio.abc.ByteStream:
    if WIRE_KIND == "asyncio":
        wire = await connect(addr, timeout=2)
        assert isinstance(wire, AsyncioWire)
        return wire
    return await anyio.connect_tcp(*split_addr(addr))


@asynccontextmanager
async def serving(server: FakeServer, **kwargs: Any) -> AsyncIterator[Running]:
    """A connection to ``server`` whose serve() runs for the duration of the block."""
    running = Running(BrokerConnection(server.addr, await open_for_test(server.addr), **kwargs))
    expected = AsyncioWire if WIRE_KIND == "asyncio" else StreamWire
    assert isinstance(running.conn._wire, expected)
    async with anyio.create_task_group() as tg:
        tg.start_soon(running.serve)
        yield running
        tg.cancel_scope.cancel()


async def test_request_response_and_out_of_order_answers() -> None:
    held: list[tuple[FakePeer, RemotingCommand]] = []
    all_in = anyio.Event()

    async def hold_then_answer_backwards(peer: FakePeer, cmd: RemotingCommand) -> None:
        held.append((peer, cmd))
        if len(held) == 5:
            all_in.set()
            for p, c in reversed(held):
                await p.reply(c, ResponseCode.SUCCESS, ext_fields={"echo": c.ext_fields["n"]})

    async with FakeServer(hold_then_answer_backwards) as server, serving(server) as running:
        results: dict[int, str] = {}

        async def ask(n: int) -> None:
            reply = await running.conn.request(_req(n=str(n)), timeout=5)
            results[n] = reply.ext_fields["echo"]

        async with anyio.create_task_group() as tg:
            for n in range(5):
                tg.start_soon(ask, n)
        assert results == {n: str(n) for n in range(5)}
        assert running.conn.pending == 0


async def test_garbage_frame_fails_pending_at_once_with_the_cause() -> None:
    async def garbage(peer: FakePeer, cmd: RemotingCommand) -> None:
        await peer.send_raw(struct.pack(">iI", 100, 0xFF000004) + b"junk")

    async with FakeServer(garbage) as server, serving(server) as running:
        with anyio.fail_after(1), pytest.raises(ConnectionLost) as info:
            await running.conn.request(_req(), timeout=30)
        assert isinstance(info.value.__cause__, ProtocolError)
        assert info.value.outcome_unknown and info.value.retriable
        await running.finished.wait()
        assert isinstance(running.error, ProtocolError) and not running.conn.is_open


async def test_half_a_frame_then_close() -> None:
    async def half_then_close(peer: FakePeer, cmd: RemotingCommand) -> None:
        frame = cmd.response(0).encode()
        await peer.send_raw(frame[: len(frame) // 2])
        await peer.close()

    async with FakeServer(half_then_close) as server, serving(server) as running:
        with anyio.fail_after(1), pytest.raises(ConnectionLost) as info:
            await running.conn.request(_req(), timeout=30)
        assert isinstance(info.value.__cause__, ConnectionClosedByPeer)


async def test_peer_close_fails_every_pending_request_together() -> None:
    arrived = anyio.Event()

    async def stall(peer: FakePeer, cmd: RemotingCommand) -> None:
        if len(peer.received) == 20:
            arrived.set()
        await anyio.sleep_forever()

    async with FakeServer(stall) as server, serving(server) as running:
        errors: list[BaseException] = []

        async def ask() -> None:
            try:
                await running.conn.request(_req(), timeout=60)
            except ConnectionLost as exc:
                errors.append(exc)

        with anyio.fail_after(2):
            async with anyio.create_task_group() as tg:
                for _ in range(20):
                    tg.start_soon(ask)
                await arrived.wait()
                await server.peers[0].close()
        assert len(errors) == 20 and running.conn.pending == 0


async def test_stall_times_out_and_the_connection_stays_usable() -> None:
    async def stall_first(peer: FakePeer, cmd: RemotingCommand) -> None:
        if len(peer.received) == 1:
            await anyio.sleep_forever()
        await peer.reply(cmd)

    async with FakeServer(stall_first) as server, serving(server) as running:
        with pytest.raises(RequestTimeout) as info:
            await running.conn.request(_req(), timeout=0.05)
        assert info.value.outcome_unknown
        # the request's own code and timeout, kept beside its waiter
        assert (info.value.code, info.value.timeout) == (RequestCode.GET_MAX_OFFSET, 0.05)
        assert (await running.conn.request(_req(), timeout=5)).code == ResponseCode.SUCCESS
        assert running.conn.is_open and running.conn.pending == 0


async def test_late_response_after_timeout_is_dropped() -> None:
    release = anyio.Event()

    async def late(peer: FakePeer, cmd: RemotingCommand) -> None:
        if len(peer.received) == 1:
            await release.wait()
        await peer.reply(cmd)

    async with FakeServer(late) as server, serving(server) as running:
        with pytest.raises(RequestTimeout):
            await running.conn.request(_req(), timeout=0.05)
        release.set()
        assert (await running.conn.request(_req(), timeout=5)).code == ResponseCode.SUCCESS


async def test_inbound_requests_reach_the_handler_and_unknown_codes_get_an_answer() -> None:
    seen: list[int] = []

    def on_request(conn: BrokerConnection, cmd: RemotingCommand) -> None:
        seen.append(cmd.code)
        if not cmd.is_oneway:
            conn.send_response(cmd.response(ResponseCode.REQUEST_CODE_NOT_SUPPORTED))

    async with FakeServer() as server, serving(server, on_request=on_request) as running:
        await running.conn.request(_req(), timeout=5)
        peer = await server.wait_peer()
        await peer.push(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, oneway=True, consumerGroup="g")
        opaque = await peer.push(9999)
        with anyio.fail_after(2):
            await peer.wait_responses(1)
        assert seen == [RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, 9999]
        (answer,) = peer.responses
        assert answer.opaque == opaque and answer.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED


async def test_without_handler_two_way_requests_are_refused() -> None:
    async with FakeServer() as server, serving(server) as running:
        await running.conn.request(_req(), timeout=5)
        peer = await server.wait_peer()
        await peer.push(307, consumerGroup="g", clientId="c")
        with anyio.fail_after(2):
            (answer,) = await peer.wait_responses(1)
        assert answer.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED


async def test_flood_of_inbound_requests_does_not_starve_responses() -> None:
    count = 0

    def on_request(conn: BrokerConnection, cmd: RemotingCommand) -> None:
        nonlocal count
        count += 1

    async def flood_then_answer(peer: FakePeer, cmd: RemotingCommand) -> None:
        for _ in range(2000):
            await peer.push(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, oneway=True, consumerGroup="g")
        await peer.reply(cmd)

    async with (
        FakeServer(flood_then_answer) as server,
        serving(server, on_request=on_request) as running,
    ):
        with anyio.fail_after(10):
            reply = await running.conn.request(_req(), timeout=10)
        assert reply.code == ResponseCode.SUCCESS and count == 2000


async def test_in_flight_cap_is_backpressure_not_an_error() -> None:
    release = anyio.Event()

    async def gated(peer: FakePeer, cmd: RemotingCommand) -> None:
        await release.wait()
        await peer.reply(cmd)

    async with FakeServer(gated) as server, serving(server, max_in_flight=2) as running:
        done = 0

        async def ask() -> None:
            nonlocal done
            await running.conn.request(_req(), timeout=10, slot=True)
            done += 1

        async with anyio.create_task_group() as tg:
            for _ in range(6):
                tg.start_soon(ask)
            with anyio.fail_after(2):
                peer = await server.wait_peer()
                await peer.wait_received(2)
            await anyio.wait_all_tasks_blocked()
            assert len(peer.received) == 2  # the other four wait for a slot
            release.set()
        assert done == 6


async def test_requests_without_a_slot_pass_the_held_ones() -> None:
    """Every slot held by requests the peer holds (a consumer's pulls, one per queue): the
    requests that take no slot (a heartbeat, an offset lookup) still leave and are answered,
    while another held request waits for a slot. A client of more queues than slots once
    starved its heartbeats until the broker dropped it as silent."""
    release = anyio.Event()

    async def hold_pulls(peer: FakePeer, cmd: RemotingCommand) -> None:
        if cmd.code == RequestCode.PULL_MESSAGE:
            await release.wait()
        await peer.reply(cmd)

    async with FakeServer(hold_pulls) as server, serving(server, max_in_flight=2) as running:
        conn = running.conn
        pulled = 0

        async def pull() -> None:
            nonlocal pulled
            await conn.request(_req(RequestCode.PULL_MESSAGE), timeout=10, slot=True)
            pulled += 1

        async with anyio.create_task_group() as tg:
            for _ in range(3):
                tg.start_soon(pull)
            with anyio.fail_after(5):
                peer = await server.wait_peer()
                await peer.wait_received(2)
                await anyio.wait_all_tasks_blocked()
                for code in (RequestCode.HEART_BEAT, RequestCode.QUERY_CONSUMER_OFFSET):
                    reply = await conn.request(_req(code), timeout=5)
                    assert reply.code == ResponseCode.SUCCESS
            pulls = [c for c in peer.received if c.code == RequestCode.PULL_MESSAGE]
            assert len(pulls) == 2 and pulled == 0  # the third pull still waits for a slot
            release.set()
        assert pulled == 3


async def test_start_encoded_queues_at_once_or_declines_without_side_effects() -> None:
    """The send path's half request: queued and its waiter returned when it need not wait;
    None, with no opaque taken, no frame built and no slot held, when it must (the caller
    then takes :meth:`request_encoded`, which waits); ``finish`` frees the slot."""
    release = anyio.Event()

    async def gated(peer: FakePeer, cmd: RemotingCommand) -> None:
        await release.wait()
        await peer.reply(cmd, ext_fields={"n": cmd.ext_fields["n"]})

    built: list[int] = []

    def encoder(n: int) -> Callable[[int], bytes]:
        def encode(opaque: int) -> bytes:
            built.append(opaque)
            cmd = _req(n=str(n))
            cmd.opaque = opaque
            return cmd.encode()

        return encode

    async with FakeServer(gated) as server, serving(server, max_in_flight=1) as running:
        conn = running.conn
        code = RequestCode.GET_MAX_OFFSET
        first = conn.start_encoded(code, encoder(1), 5.0, 10)
        assert first is not None and conn.pending == 1 and built == [first[0]]
        assert conn.start_encoded(code, encoder(2), 5.0, 10) is None  # the one slot is taken
        assert built == [first[0]] and conn.pending == 1
        assert conn.statistics()["in_flight_bytes"] == 10
        release.set()
        opaque, waiter = first
        try:
            reply = await waiter
        finally:
            conn.finish(opaque, waiter, 10)
        assert reply.ext_fields["n"] == "1"
        assert conn.pending == 0 and conn.statistics()["in_flight_bytes"] == 0

        def broken(opaque: int) -> bytes:
            raise ProtocolError("frame-too-large", "test")

        with pytest.raises(ProtocolError):
            conn.start_encoded(code, broken, 5.0, 10)
        assert conn.pending == 0 and conn.statistics()["in_flight_bytes"] == 0
        again = conn.start_encoded(code, encoder(3), 5.0, 10)  # the slot was freed
        assert again is not None
        try:
            assert (await again[1]).ext_fields["n"] == "3"
        finally:
            conn.finish(again[0], again[1], 10)
        conn.close()
        assert conn.start_encoded(code, encoder(4), 5.0, 10) is None
        assert len(built) == 2


async def test_a_cancelled_half_request_frees_its_slot() -> None:
    async def never(peer: FakePeer, cmd: RemotingCommand) -> None:
        await anyio.sleep_forever()

    async with FakeServer(never) as server, serving(server, max_in_flight=1) as running:
        conn = running.conn

        def encode(opaque: int) -> bytes:
            cmd = _req()
            cmd.opaque = opaque
            return cmd.encode()

        started = conn.start_encoded(RequestCode.GET_MAX_OFFSET, encode, 30.0)
        assert started is not None
        with anyio.move_on_after(0.05):
            try:
                await started[1]
            finally:
                conn.finish(*started, 0)
        assert conn.pending == 0
        assert conn.start_encoded(RequestCode.GET_MAX_OFFSET, encode, 30.0) is not None


async def test_writes_are_coalesced() -> None:
    async with FakeServer() as server, serving(server) as running:
        async with anyio.create_task_group() as tg:
            for _ in range(200):
                tg.start_soon(running.conn.request, _req(), 10)
        stats = running.conn.statistics()
        assert stats["requests_sent"] == 200 and stats["writes"] < 50


async def test_completed_requests_ask_the_wire_to_flush_behind_their_tasks() -> None:
    async with FakeServer() as server, serving(server) as running:
        wire = running.conn._wire
        asked: list[int] = []
        flush_after_woken = wire.flush_after_woken

        def counting() -> None:
            asked.append(running.conn.pending)
            flush_after_woken()

        wire.flush_after_woken = counting  # type: ignore[method-assign]
        await running.conn.oneway(_req())  # no response: nobody woken, no flush asked
        async with anyio.create_task_group() as tg:
            for _ in range(3):
                tg.start_soon(running.conn.request, _req(), 10)
        assert asked and len(asked) <= 3  # once per chunk that completed requests


async def test_oneway_and_close() -> None:
    async with FakeServer() as server, serving(server) as running:
        await running.conn.oneway(_req(RequestCode.UPDATE_CONSUMER_OFFSET, topic="t"))
        with anyio.fail_after(2):
            received = await (await server.wait_peer()).wait_received(1)
        assert received[0].is_oneway
        running.conn.close()
        await running.finished.wait()
        assert running.error is None and not running.conn.is_open
        with pytest.raises(ConnectionLost):
            await running.conn.request(_req(), timeout=1)


async def test_connect_errors_are_typed() -> None:
    with pytest.raises(ConnectError, match=r"127\.0\.0\.1:1"):
        await connect("127.0.0.1:1", timeout=2)
    with pytest.raises(ConnectError, match="not host:port") as info:
        await connect("no-port", timeout=2)  # (an address from route data: not config)
    assert not info.value.retriable


async def test_close_flushes_queued_oneway_frames_first() -> None:
    """One-way requests (offset commits, END_TRANSACTION) queued before close() are written."""
    async with FakeServer() as server, serving(server) as running:
        for i in range(50):
            await running.conn.oneway(_req(RequestCode.UPDATE_CONSUMER_OFFSET, n=str(i)))
        running.conn.close()
        await running.finished.wait()
        peer = await server.wait_peer()
        with anyio.fail_after(2):
            received = await peer.wait_received(50)
        assert [c.ext_fields["n"] for c in received] == [str(i) for i in range(50)]


async def test_a_cancelled_caller_does_not_break_the_connection() -> None:
    """A caller cancelled mid-request (its future is cancelled with it): the late response
    must be dropped, not raise in the reader and kill every other request."""
    release = anyio.Event()

    async def late(peer: FakePeer, cmd: RemotingCommand) -> None:
        if cmd.ext_fields.get("slow"):
            await release.wait()
        await peer.reply(cmd)

    async with FakeServer(late) as server, serving(server) as running:
        with anyio.move_on_after(0.05):
            await running.conn.request(_req(slow="1"), timeout=30)
        assert running.conn.pending == 0
        release.set()  # the response to the cancelled request arrives now
        for _ in range(3):
            assert (await running.conn.request(_req(), timeout=5)).code == ResponseCode.SUCCESS
        assert running.conn.is_open and running.error is None


async def test_one_way_frames_wait_while_the_peer_does_not_read() -> None:
    """One-way requests hold no in-flight slot; a peer that stops reading must slow them down
    (backpressure), not let the client buffer without bound."""
    body = b"x" * (256 * 1024)
    # a listening socket nobody accepts from: the kernel completes the handshake, then its
    # buffers fill and nothing more is read
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = listener.getsockname()[1]
        async with anyio.create_task_group() as tg:
            conn = BrokerConnection("peer", await open_for_test(f"127.0.0.1:{port}"))
            tg.start_soon(conn.serve)
            sent = 0
            with anyio.move_on_after(1.0):
                while True:
                    cmd = RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, body=body)
                    await conn.oneway(cmd)
                    sent += 1
            # 1 s of unbounded writing would queue gigabytes; backpressure stops it within
            # the kernel's socket buffers plus one high-water mark
            assert 1 <= sent * len(body) < 64 * 1024 * 1024
            assert conn._wire.paused
            tg.cancel_scope.cancel()


def test_the_asyncio_wire_runs_on_uvloop() -> None:
    """uvloop's transports are not asyncio.Transport subclasses; the wire must not care."""
    pytest.importorskip("uvloop", reason="uvloop is an optional extra (installed by dev)")

    async def round_trip() -> tuple[str, int]:
        async with FakeServer() as server, serving(server) as running:
            reply = await running.conn.request(_req(), timeout=5)
            return type(running.conn._wire).__name__, reply.code

    wire, code = anyio.run(round_trip, backend_options={"use_uvloop": True})
    expected = "AsyncioWire" if WIRE_KIND == "asyncio" else "StreamWire"
    assert (wire, code) == (expected, ResponseCode.SUCCESS)


async def test_a_peer_that_stops_reading_bounds_the_outgoing_buffer() -> None:
    """Before: requests that timed out freed their in-flight slots but not their bytes, so a
    peer that stopped reading grew the outgoing buffer without bound (113 MiB at 500k
    requests). Now a request waits while too much is unwritten, then fails WriteTimeout."""
    limit = 2 * 1024 * 1024
    body = b"b" * 65536
    with socket.socket() as listening:  # nobody accepts: the kernel buffers, then stops
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        addr = f"127.0.0.1:{listening.getsockname()[1]}"
        conn = BrokerConnection(
            addr, await open_for_test(addr), max_in_flight_bytes=limit, close_after_timeout=math.inf
        )  # (its timeouts leave it open)
        running = Running(conn)
        outcomes: list[BaseException] = []
        peak = 0

        async def one() -> None:
            try:
                await running.conn.request(RemotingCommand.request(1, {}, body), timeout=0.4)
            except (RequestTimeout, WriteTimeout) as exc:
                outcomes.append(exc)

        async with anyio.create_task_group() as tg:
            tg.start_soon(running.serve)
            with anyio.fail_after(30):
                async with anyio.create_task_group() as senders:
                    for _ in range(300):  # 19 MiB: several times what the kernel takes
                        senders.start_soon(one)
                    while len(outcomes) < 300:
                        peak = max(peak, running.conn._wire.buffered)
                        await anyio.sleep(0.005)  # (sampling, not synchronization)
            tg.cancel_scope.cancel()
    assert peak <= limit + len(body) + 1024, peak
    assert any(isinstance(e, WriteTimeout) for e in outcomes)
    assert all(not e.outcome_unknown for e in outcomes if isinstance(e, WriteTimeout))


@pytest.mark.parametrize(
    ("errno", "retriable"), [(socket.EAI_NONAME, False), (socket.EAI_AGAIN, True)]
)
async def test_a_name_that_does_not_resolve_is_not_retriable(
    errno: int, retriable: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the resolver's "try again later" is worth a retry; a name that does not exist
    stays so (it was retriable, and a send tried it three times within milliseconds)."""

    def unresolvable(*args: object, **kwargs: object) -> object:
        raise socket.gaierror(errno, "the resolver's message")

    # the resolver the event loop calls, not our code
    monkeypatch.setattr(socket, "getaddrinfo", unresolvable)
    with pytest.raises(ConnectError, match=r"'nosuchhost\.invalid' does not resolve") as info:
        await connection.connect("nosuchhost.invalid:9876")
    assert info.value.retriable is retriable


async def test_500k_requests_to_a_peer_that_never_reads_stay_within_the_bound() -> None:
    """docs/usage.md's bound: with a peer that stops reading, a connection holds at most
    ``max_in_flight_bytes`` (64 MiB by default) of unwritten frames, plus the frame that
    crossed it. 500k requests of 1 KiB (eight times that bound) through the admission every
    request passes (``start_encoded``: a request it refuses waits, then fails WriteTimeout
    with nothing sent, as the test above shows): the first fill the buffer to the bound, the
    rest are refused, and the buffer never passes it."""
    body = b"k" * 1024
    bound = 64 * 1024 * 1024
    with socket.socket() as listening:  # nobody accepts: the kernel buffers, then stops
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        addr = f"127.0.0.1:{listening.getsockname()[1]}"
        running = Running(BrokerConnection(addr, await open_for_test(addr)))
        conn = running.conn
        assert conn._max_unwritten == bound  # (the documented default)
        frame = RemotingCommand.request(1, {}, body).encode()
        admitted = refused = peak = 0
        async with anyio.create_task_group() as tg:
            tg.start_soon(running.serve)
            for i in range(500_000):
                if conn.start_encoded(1, lambda opaque: frame, 600.0, len(body)) is None:
                    refused += 1
                else:
                    admitted += 1
                peak = max(peak, conn._wire.buffered)
                if i % 1000 == 0:
                    await anyio.lowlevel.checkpoint()  # (the transport writes, or pauses)
            tg.cancel_scope.cancel()
    assert admitted + refused == 500_000
    assert admitted * len(frame) > bound and refused > 400_000
    assert peak <= bound + len(frame), peak
