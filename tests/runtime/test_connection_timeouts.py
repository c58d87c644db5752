"""A request that gets no answer within its timeout closes its connection, as the Java
client's invokeSync does (clientCloseSocketIfTimeout): the peer may be gone without a word (a
partition, a half-open connection), and a fresh connection is the way to learn it is back.
Both wires, as tests/runtime/test_connection.py runs them."""

from __future__ import annotations

import anyio
import pytest

from rocketmq_actors.errors import ConnectionLost, RequestTimeout
from rocketmq_actors.protocol.codes import RequestCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.runtime.connection import CLOSE_AFTER_TIMEOUT
from rocketmq_actors.runtime.pool import ConnectionPool
from rocketmq_actors.runtime.supervisor import RestartPolicy
from rocketmq_actors.testing.fakeserver import FakePeer, FakeServer
from tests.runtime.test_connection import serving, wire_kind  # noqa: F401 (both wires)

FAST = RestartPolicy(max_restarts=3, period=10, backoff_initial=0.01, backoff_max=0.05)


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


async def test_the_pool_dials_again_after_a_timeout() -> None:
    answer = anyio.Event()

    async def silent_until_told(peer: FakePeer, cmd: RemotingCommand) -> None:
        if answer.is_set():
            await peer.reply(cmd)

    async with FakeServer(silent_until_told) as server, ConnectionPool(policy=FAST) as pool:
        first = await pool.get(server.addr)
        with anyio.fail_after(10):
            with pytest.raises(RequestTimeout):
                await pool.request(server.addr, _req(), 2 * CLOSE_AFTER_TIMEOUT)
            answer.set()
            second = await pool.get(server.addr)  # (waits for the supervisor's new one)
            assert (await pool.request(server.addr, _req(), 5)).code == 0
        assert second is not first and not first.is_open and pool.connects == 2
