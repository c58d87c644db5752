"""The fault proxy against a loopback echo server, and the delivery checkers."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator

import anyio
import anyio.abc
import pytest

from rocketmq_actors.testing.faults import FaultProxy, OrderChecker, Outcome, QueueChecker


@contextlib.asynccontextmanager
async def echo_server(arrivals: list[float] | None = None) -> AsyncIterator[str]:
    """A loopback echo server (a context manager, not a fixture: its task group must be
    entered and left in the test's own task); ``arrivals`` gets the time of every chunk
    it receives."""

    async def serve(stream: anyio.abc.SocketStream) -> None:
        async with stream:
            try:
                async for chunk in stream:
                    if arrivals is not None:
                        arrivals.append(anyio.current_time())
                    await stream.send(chunk)
            except anyio.BrokenResourceError:
                pass

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    async with anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, serve)
        yield f"127.0.0.1:{listener.extra(anyio.abc.SocketAttribute.local_port)}"
        tg.cancel_scope.cancel()


async def _connect(addr: str) -> anyio.abc.SocketStream:
    host, port = addr.rsplit(":", 1)
    return await anyio.connect_tcp(host, int(port))


async def test_forwards_then_cut_closes_every_connection() -> None:
    async with echo_server() as echo, FaultProxy(echo) as proxy:
        a, b = await _connect(proxy.addr), await _connect(proxy.addr)
        async with a, b:
            await a.send(b"ping")
            assert await a.receive() == b"ping"
            await b.send(b"pong")
            assert await b.receive() == b"pong"
            assert proxy.connections == 2
            assert proxy.cut() == 2
            with anyio.fail_after(5), pytest.raises((anyio.EndOfStream, anyio.BrokenResourceError)):
                await a.receive()
        # a new connection works after a cut
        async with await _connect(proxy.addr) as c:
            await c.send(b"again")
            assert await c.receive() == b"again"


async def test_stall_holds_bytes_until_resume() -> None:
    async with echo_server() as echo, FaultProxy(echo) as proxy, await _connect(proxy.addr) as conn:
        proxy.stall()
        await conn.send(b"held")
        with anyio.move_on_after(0.3) as waited:
            await conn.receive()
        assert waited.cancelled_caught  # nothing came through while stalled
        proxy.resume()
        with anyio.fail_after(5):
            assert await conn.receive() == b"held"


async def test_delay_and_drop_and_refuse() -> None:
    async with echo_server() as echo, FaultProxy(echo) as proxy:
        async with await _connect(proxy.addr) as conn:
            proxy.set_delay(0.1)
            began = time.monotonic()
            await conn.send(b"slow")
            assert await conn.receive() == b"slow"
            assert time.monotonic() - began >= 0.2  # delayed both ways
            proxy.set_delay(0)
            proxy.drop()
            await conn.send(b"lost")
            with anyio.move_on_after(0.3) as waited:
                await conn.receive()
            assert waited.cancelled_caught
            proxy.drop(False)
        proxy.refuse()
        async with await _connect(proxy.addr) as refused:
            with anyio.fail_after(5), pytest.raises((anyio.EndOfStream, anyio.BrokenResourceError)):
                await refused.receive()


async def test_delay_with_jitter_holds_each_chunk_base_plus_or_minus_jitter() -> None:
    """Each hop of each message, one message at a time (so each is one chunk), is held
    between base - jitter and base + jitter (plus slack for a loaded machine), and the
    holds do vary."""
    base, jitter, slack = 0.05, 0.04, 0.5
    arrivals: list[float] = []
    held: list[float] = []
    async with (
        echo_server(arrivals) as echo,
        FaultProxy(echo, seed=47) as proxy,
        await _connect(proxy.addr) as conn,
    ):
        proxy.set_delay(base, jitter=jitter)
        for i in range(30):
            message = b"%04d" % i
            sent = anyio.current_time()
            await conn.send(message)
            with anyio.fail_after(5):
                assert await conn.receive() == message
            held += [arrivals[-1] - sent, anyio.current_time() - arrivals[-1]]
    assert len(arrivals) == 30
    assert all(base - jitter - 0.001 <= hold <= base + jitter + slack for hold in held), held
    assert max(held) - min(held) > jitter  # 60 draws over a 2 * jitter range


async def test_delay_never_reorders_and_is_latency_not_a_bandwidth_limit() -> None:
    """2 MB each way, at least 32 chunks (one read takes 64 KiB at most): with jitter the
    bytes come back in order; with a plain delay the whole echo takes about one delay
    each way, not one per chunk (which would be 64 delays, 12.8 s)."""
    payload = b"".join(i.to_bytes(4, "big") for i in range(512 * 1024))

    async def echo_through(proxy: FaultProxy) -> tuple[bytes, float]:
        received = bytearray()
        began = anyio.current_time()
        async with await _connect(proxy.addr) as conn, anyio.create_task_group() as tg:
            tg.start_soon(conn.send, payload)
            with anyio.fail_after(30):
                while len(received) < len(payload):
                    received += await conn.receive()
        return bytes(received), anyio.current_time() - began

    async with echo_server() as echo, FaultProxy(echo, seed=47) as proxy:
        proxy.set_delay(0.05, jitter=0.04)
        received, _ = await echo_through(proxy)
        assert received == payload
        proxy.set_delay(0.2)
        received, took = await echo_through(proxy)
        assert received == payload
        assert 0.4 <= took < 0.4 + 3.0


def test_set_delay_refuses_negative_values() -> None:
    proxy = FaultProxy("127.0.0.1:1")
    with pytest.raises(ValueError, match="negative"):
        proxy.set_delay(0.1, jitter=-0.01)


def test_queue_checker_counts_lost_duplicates_and_unknowns() -> None:
    checker = QueueChecker()
    for key, outcome in [
        ("a", Outcome.OK), ("b", Outcome.OK), ("c", Outcome.UNKNOWN), ("d", Outcome.FAILED),
        ("e", Outcome.UNKNOWN),
    ]:  # fmt: skip
        checker.record_send(key, outcome)
    for key in ["a", "a", "c"]:
        checker.record_receive(key)
    result = checker.check()
    assert result.lost == ("b",) and not result.ok
    assert checker.unreceived == len(result.lost) == 1
    assert result.duplicates == 1 and result.unique_received == 2 and result.received == 3
    assert result.sent == {"ok": 2, "failed": 1, "unknown": 2}
    checker.record_receive("b")
    assert checker.check().ok and checker.unreceived == 0
    checker.record_receive("f")  # received before its send settled (the reply came late)
    checker.record_send("f", Outcome.OK)
    assert checker.unreceived == 0 and checker.check().lost == ()
    checker.record_receive("d")  # a refused send was delivered anyway: a bug somewhere
    assert checker.check().unexpected == ("d",)


@pytest.mark.parametrize(
    ("received", "ok"),
    [
        ([0, 1, 2, 3], True),
        ([0, 1, 2, 1, 2, 3], True),  # redelivery after a rebalance: allowed
        ([0, 1, 3], False),  # 2 acknowledged, skipped: a gap
        ([0, 2, 1, 3], False),  # reordered
        ([0, 1], True),  # not all delivered yet: the queue checker's business, not order's
    ],
)
def test_order_checker(received: list[int], ok: bool) -> None:
    checker = OrderChecker()
    for seq in range(4):
        checker.record_send("k", seq, Outcome.OK)
    for seq in received:
        checker.record_receive("k", seq)
    assert checker.check().ok is ok


def test_order_checker_lets_unknown_sends_be_missing() -> None:
    checker = OrderChecker()
    for seq, outcome in enumerate([Outcome.OK, Outcome.UNKNOWN, Outcome.OK]):
        checker.record_send("k", seq, outcome)
    for seq in [0, 2]:
        checker.record_receive("k", seq)
    assert checker.check().ok
