"""Learning a broker's version: concurrent callers share one heartbeat per broker."""

from __future__ import annotations

from functools import partial
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from rocketmq_actors.cluster.heartbeat import HeartbeatService
from rocketmq_actors.errors import ConnectError, RequestTimeout
from rocketmq_actors.protocol.bodies import ConsumerData
from rocketmq_actors.protocol.codes import RequestCode, ResponseCode
from rocketmq_actors.protocol.command import RemotingCommand


class _Pool:
    """Answers HEART_BEAT as a broker of ``version`` once ``open`` is set (or fails)."""

    def __init__(self, version: int = 479, error: Exception | None = None) -> None:
        self.version = version
        self.error = error
        self.open = anyio.Event()
        self.requests: list[tuple[str, int]] = []

    async def request(self, addr: str, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        self.requests.append((addr, cmd.code))
        await self.open.wait()
        if self.error is not None:
            raise self.error
        reply = cmd.response(ResponseCode.SUCCESS)
        reply.version = self.version
        return reply


def _service(pool: _Pool) -> HeartbeatService:
    service = HeartbeatService(pool, None, "client-1")  # type: ignore[arg-type]
    service.add_producer("G")
    return service


async def test_concurrent_callers_share_one_heartbeat_per_broker() -> None:
    """Before: each of the 1000 callers sent its own heartbeat (1000 requests to a:1)."""
    pool = _Pool(version=407)
    service = _service(pool)
    versions: list[int] = []

    async def ask(addr: str) -> None:
        versions.append(await service.version_of(addr, 5.0))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            for _ in range(1000):
                tg.start_soon(ask, "a:1")
            tg.start_soon(ask, "b:1")
            await anyio.wait_all_tasks_blocked()
            pool.open.set()
    assert sorted(pool.requests) == [
        ("a:1", RequestCode.HEART_BEAT),
        ("b:1", RequestCode.HEART_BEAT),
    ]
    assert versions == [407] * 1001
    assert await service.version_of("a:1", 5.0) == 407 and len(pool.requests) == 2  # known now


async def test_the_heartbeat_s_error_reaches_every_waiting_caller() -> None:
    pool = _Pool(error=ConnectError("a:1", "refused"))
    service = _service(pool)
    errors: list[BaseException] = []

    async def ask() -> None:
        try:
            await service.version_of("a:1", 5.0)
        except ConnectError as exc:
            errors.append(exc)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            for _ in range(10):
                tg.start_soon(ask)
            await anyio.wait_all_tasks_blocked()
            pool.open.set()
    assert len(errors) == 10 and len(pool.requests) == 1
    pool.error = None  # the next caller asks again: a failure is not remembered
    assert await service.version_of("a:1", 5.0) == 479 and len(pool.requests) == 2


async def test_a_waiting_caller_gives_up_at_its_own_timeout() -> None:
    pool = _Pool()
    service = _service(pool)
    results: dict[str, Any] = {}

    async def patient() -> None:
        results["patient"] = await service.version_of("a:1", 5.0)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(patient)
            await anyio.wait_all_tasks_blocked()
            with pytest.raises(RequestTimeout):
                await service.version_of("a:1", 0.05)  # waits on the first caller's heartbeat
            pool.open.set()
    assert results == {"patient": 479} and len(pool.requests) == 1


class _Routes:
    def __init__(self, *addrs: str) -> None:
        self.addrs = set(addrs)

    def broker_addrs(self, *, masters_only: bool) -> set[str]:
        return self.addrs


async def test_a_broker_connected_to_again_is_heartbeaten_at_once_then_told() -> None:
    """A broker drops a client's groups with its connection: on the new one the actor
    heartbeats it now, not at the next interval (Java's onChannelActive), and says so."""
    pool = _Pool()
    pool.open.set()
    service = HeartbeatService(pool, _Routes("a:1", "b:1"), "client-1", interval=3600)  # type: ignore[arg-type]
    data = ConsumerData(group="C", consume_type="CONSUME_PASSIVELY", message_model="CLUSTERING",
                        consume_from_where="CONSUME_FROM_LAST_OFFSET")  # fmt: skip
    service.add_consumer("C", lambda: data)
    registered: list[str] = []
    told = anyio.Event()

    def on_registered(addr: str) -> None:
        registered.append(addr)
        told.set()

    service.on_registered = on_registered
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            await tg.start(service.run)
            while service.rounds < 1:  # the first full round (both brokers)
                await anyio.lowlevel.checkpoint()
            service.again("b:1")
            service.again("namesrv:9876")  # (not a broker of ours: nothing sent)
            await told.wait()
            await anyio.wait_all_tasks_blocked()  # (the actor rests again: no more rounds)
            tg.cancel_scope.cancel()
    assert [addr for addr, _ in pool.requests] == ["a:1", "b:1", "b:1"]
    assert registered == ["b:1"] and service.rounds == 1  # (the interval did not pass)


class _OneSilent(_Pool):
    """Answers every broker but ``silent``, which never answers."""

    def __init__(self, silent: str) -> None:
        super().__init__()
        self.silent = silent
        self.open.set()

    async def request(self, addr: str, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        if addr == self.silent:
            self.requests.append((addr, cmd.code))
            await anyio.sleep_forever()
        return await super().request(addr, cmd, timeout)


async def test_a_silent_broker_does_not_hold_back_the_others_connected_to_again() -> None:
    pool = _OneSilent("a:1")
    service = HeartbeatService(pool, _Routes("a:1", "b:1"), "client-1", interval=3600,  # type: ignore[arg-type]
                               timeout=60)  # fmt: skip
    service.add_producer("G")
    told = anyio.Event()
    service.on_registered = lambda addr: told.set()
    with anyio.fail_after(5):  # (the silent one's timeout is 60 s)
        async with anyio.create_task_group() as tg:
            tg.start_soon(partial(service.beat, {"a:1", "b:1"}, answered=service._registered))
            await told.wait()
            tg.cancel_scope.cancel()


async def test_brokers_told_before_the_actor_runs_are_heartbeaten_as_it_starts() -> None:
    pool = _Pool()
    pool.open.set()
    service = HeartbeatService(pool, _Routes("a:1"), "client-1", interval=3600)  # type: ignore[arg-type]
    service.add_producer("G")
    told = anyio.Event()
    service.on_registered = lambda addr: told.set()
    service.again("a:1")  # (a restarted actor: its predecessor was told)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            await tg.start(service.run)
            await told.wait()
            tg.cancel_scope.cancel()
    assert [addr for addr, _ in pool.requests] == ["a:1", "a:1"]  # the round, then again
