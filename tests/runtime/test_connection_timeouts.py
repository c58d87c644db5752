"""A request that gets no answer within its timeout closes its connection, as the Java
client's invokeSync does (clientCloseSocketIfTimeout): the peer may be gone without a word (a
partition, a half-open connection), and a fresh connection is the way to learn it is back.
Both wires, as tests/runtime/test_connection.py runs them."""

from __future__ import annotations

import socket

import anyio
import anyio.lowlevel
import pytest

from rocketmq_actors.errors import ConnectionLost, RequestTimeout
from rocketmq_actors.protocol.codes import RequestCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.runtime.connection import CLOSE_AFTER_TIMEOUT, BrokerConnection
from rocketmq_actors.runtime.pool import ConnectionPool
from rocketmq_actors.runtime.supervisor import RestartPolicy
from rocketmq_actors.testing.fakeserver import FakePeer, FakeServer
from tests.runtime.test_connection import (  # noqa: F401 (wire_kind: both wires)
    Running,
    open_for_test,
    serving,
    wire_kind,
)

#: a backoff longer than the test waits: a connection closed for a timeout is dialled at once
SLOW = RestartPolicy(max_restarts=3, period=10, backoff_initial=30.0, backoff_max=60.0)


def _req() -> RemotingCommand:
    return RemotingCommand.request(RequestCode.GET_MAX_OFFSET, {"topic": "t", "queueId": "0"})


async def never_answer(peer: FakePeer, cmd: RemotingCommand) -> None:
    pass


async def test_a_request_without_an_answer_closes_its_connection() -> None:
    async with FakeServer(never_answer) as server, serving(server) as running:
        conn = running.conn
        lost: list[BaseException] = []

        async def patient() -> None:  # in flight on the same connection, a long timeout
            try:
                await conn.request(_req(), timeout=60)
            except ConnectionLost as exc:
                lost.append(exc)

        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(patient)
                while conn.pending < 1:
                    await anyio.lowlevel.checkpoint()
                with pytest.raises(RequestTimeout):
                    await conn.request(_req(), timeout=2 * CLOSE_AFTER_TIMEOUT)
            await running.finished.wait()
        assert not conn.is_open
        assert isinstance(running.error, RequestTimeout)  # serve() ends with it
        assert len(lost) == 1 and isinstance(lost[0].__cause__, RequestTimeout)


async def test_a_request_with_next_to_no_time_leaves_the_connection_open() -> None:
    """A request given a sliver of a deadline that ran out elsewhere says nothing of the
    peer (Java: MIN_CLOSE_TIMEOUT_MILLIS)."""
    async with FakeServer(never_answer) as server, serving(server) as running:
        with anyio.fail_after(10), pytest.raises(RequestTimeout):
            await running.conn.request(_req(), timeout=CLOSE_AFTER_TIMEOUT / 2)
        assert running.conn.is_open and not running.finished.is_set()


# (named here, not read from HELD_REQUESTS: a code taken out of it must fail its case)
HELD = [RequestCode.PULL_MESSAGE, RequestCode.LITE_PULL_MESSAGE, RequestCode.POP_MESSAGE]


@pytest.mark.parametrize("code", HELD)
async def test_a_held_request_that_times_out_leaves_the_connection_open(code: int) -> None:
    """A pull or a pop is held by the broker (long polling) and Java sends it asynchronously,
    which never closes a channel: its timeout says nothing more of the connection."""
    async with FakeServer(never_answer) as server, serving(server) as running:
        held = RemotingCommand.request(code, {"topic": "t", "queueId": "0"})
        with anyio.fail_after(10), pytest.raises(RequestTimeout):
            await running.conn.request(held, timeout=2 * CLOSE_AFTER_TIMEOUT)
        assert running.conn.is_open and not running.finished.is_set()


async def test_the_pool_dials_again_at_once_after_a_timeout() -> None:
    answer = anyio.Event()

    async def silent_until_told(peer: FakePeer, cmd: RemotingCommand) -> None:
        if answer.is_set():
            await peer.reply(cmd)

    async with FakeServer(silent_until_told) as server, ConnectionPool(policy=SLOW) as pool:
        first = await pool.get(server.addr)
        with anyio.fail_after(10):
            with pytest.raises(RequestTimeout):
                await pool.request(server.addr, _req(), 2 * CLOSE_AFTER_TIMEOUT)
            answer.set()
            second = await pool.get(server.addr)  # (waits for the supervisor's new one)
            assert (await pool.request(server.addr, _req(), 5)).code == 0
        assert second is not first and not first.is_open and pool.connects == 2


async def test_a_one_way_frame_waiting_for_room_fails_as_lost_when_a_timeout_closes() -> None:
    """A one-way frame (an offset commit, END_TRANSACTION) waits while a peer that stopped
    reading holds the buffer; the timeout that closes the connection fails it as lost
    (retriable), not as a connection closed by this client."""
    with socket.socket() as listening:  # nobody accepts: the kernel buffers, then stops
        # (a small receive buffer: the kernel takes far less than the first frame below)
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        addr = f"127.0.0.1:{listening.getsockname()[1]}"
        running = Running(BrokerConnection(addr, await open_for_test(addr)))
        conn = running.conn
        timed_out: list[BaseException] = []

        async def stalled(mib: int, timeout: float) -> None:
            body = b"b" * (mib * 1024 * 1024)
            try:
                await conn.request(RemotingCommand.request(RequestCode.SEND_MESSAGE, {}, body),
                                   timeout)  # fmt: skip
            except (RequestTimeout, ConnectionLost) as exc:
                timed_out.append(exc)

        async with anyio.create_task_group() as tg:
            tg.start_soon(running.serve)
            with anyio.fail_after(10):
                # more than the kernel takes (the writer stays in it), then one queued behind
                # it that holds the wire paused; the first times out
                tg.start_soon(stalled, 15, 0.5)
                await anyio.wait_all_tasks_blocked()
                tg.start_soon(stalled, 2, 30.0)
                while not conn._wire.paused:
                    await anyio.lowlevel.checkpoint()
                with pytest.raises(ConnectionLost) as lost:
                    await conn.oneway(_req(), timeout=8)
                await running.finished.wait()
            tg.cancel_scope.cancel()
        assert isinstance(lost.value.__cause__, RequestTimeout) and lost.value.retriable
        assert sorted(type(e).__name__ for e in timed_out) == ["ConnectionLost", "RequestTimeout"]
