from __future__ import annotations

import anyio
import pytest

from rocketmq_actors.errors import ConnectError, ConnectionLost
from rocketmq_actors.protocol.codes import RequestCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.runtime.pool import ConnectionPool
from rocketmq_actors.runtime.supervisor import RestartPolicy
from rocketmq_actors.testing.fakeserver import FakePeer, FakeServer

FAST = RestartPolicy(max_restarts=3, period=10, backoff_initial=0.01, backoff_max=0.05)


def _req() -> RemotingCommand:
    return RemotingCommand.request(RequestCode.GET_MAX_OFFSET, {"topic": "t", "queueId": "0"})


async def test_concurrent_callers_share_one_connection() -> None:
    async with FakeServer() as server, ConnectionPool(policy=FAST) as pool:
        conns = []

        async def get() -> None:
            conns.append(await pool.get(server.addr))

        async with anyio.create_task_group() as tg:
            for _ in range(20):
                tg.start_soon(get)
        assert len({id(c) for c in conns}) == 1 and pool.connects == 1
        assert (await pool.request(server.addr, _req(), 5)).code == 0


async def test_unreachable_address_is_a_connect_error() -> None:
    async with ConnectionPool(policy=FAST, connect_timeout=1) as pool:
        with pytest.raises(ConnectError):
            await pool.get("127.0.0.1:1")
        assert not pool.supervisor.has_child("127.0.0.1:1")  # failed starts are not kept


async def test_dropped_connection_is_reconnected_by_the_supervisor() -> None:
    async with FakeServer() as server, ConnectionPool(policy=FAST) as pool:
        first = await pool.get(server.addr)
        peer = await server.wait_peer(0)
        await peer.close()
        with anyio.fail_after(5):
            second_peer = await server.wait_peer(1)  # the supervisor reconnected on its own
            second = await pool.get(server.addr)
        assert second is not first and second.is_open and not first.is_open
        assert second_peer is server.peers[1]
        assert (await pool.request(server.addr, _req(), 5)).code == 0
        assert pool.supervisor.statistics().restarts == 1


class _Told:
    def __init__(self) -> None:
        self.addrs: list[str] = []
        self.event = anyio.Event()

    def __call__(self, addr: str) -> None:
        self.addrs.append(addr)
        self.event.set()


async def test_a_connection_to_a_peer_that_served_the_last_one_is_told_at_once() -> None:
    told = _Told()
    async with FakeServer() as server, ConnectionPool(policy=FAST, on_reconnect=told) as pool:
        assert (await pool.request(server.addr, _req(), 5)).code == 0
        assert told.addrs == []  # the first connection is no reconnect
        await (await server.wait_peer(0)).close()
        with anyio.fail_after(5):
            await told.event.wait()  # (no request on the new one: told as it registers)
        assert told.addrs == [server.addr]


async def test_a_connection_after_one_that_was_never_answered_is_told_at_its_first_answer() -> None:
    """A peer that accepts connections but never answers (a stopped broker) is not told about
    at each dial: a new connection is, once the peer serves it."""
    told = _Told()
    async with FakeServer() as server, ConnectionPool(policy=FAST, on_reconnect=told) as pool:
        first = await pool.get(server.addr)  # (nothing asked on it: never answered)
        await (await server.wait_peer(0)).close()
        with anyio.fail_after(5):
            await server.wait_peer(1)  # the supervisor reconnected on its own
            second = await pool.get(server.addr)
            await anyio.wait_all_tasks_blocked()
            assert second is not first and told.addrs == []
            assert (await pool.request(server.addr, _req(), 5)).code == 0
            await told.event.wait()
        assert told.addrs == [server.addr]


async def test_pending_requests_fail_when_the_connection_drops() -> None:
    async def stall(peer: FakePeer, cmd: RemotingCommand) -> None:
        await anyio.sleep_forever()

    async with FakeServer(stall) as server, ConnectionPool(policy=FAST) as pool:
        async with anyio.create_task_group() as tg:
            errors: list[BaseException] = []

            async def ask() -> None:
                try:
                    await pool.request(server.addr, _req(), 30)
                except ConnectionLost as exc:
                    errors.append(exc)

            for _ in range(5):
                tg.start_soon(ask)
            peer = await server.wait_peer()
            await peer.wait_received(5)
            with anyio.fail_after(1):
                await peer.close()
        assert len(errors) == 5


async def test_closing_the_pool_leaves_no_tasks() -> None:
    baseline = len(anyio.get_running_tasks())
    async with FakeServer() as server:
        async with ConnectionPool(policy=FAST) as pool:
            for _ in range(3):
                await pool.request(server.addr, _req(), 5)
            assert len(anyio.get_running_tasks()) > baseline
        assert not pool.registry.lookup(server.addr)
    assert len(anyio.get_running_tasks()) == baseline
