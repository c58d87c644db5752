"""The send loop's two ways onto a connection, against the real broker."""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import Any

import anyio
import pytest

from rocketmq_actors.producer import Message, Producer, SendStatus
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.runtime.connection import BrokerConnection

from .pull import pull

pytestmark = pytest.mark.integration


async def test_sends_that_must_wait_for_a_slot_take_the_waiting_path(
    rocketmq_namesrv: str, unique_group: str, unique_topic: str
) -> None:
    """A send normally starts its request without a coroutine between it and the connection
    (``start_encoded``); one that finds the connection full must wait for a slot
    (``request_encoded``). Both deliver: every message is stored once, in its queue."""
    async with Producer(namesrv=rocketmq_namesrv, group=unique_group) as producer:
        first = await producer.send(Message(topic=unique_topic, body=b"warm"))
        addr = producer.instance.routes.cached(unique_topic).master_addr(  # type: ignore[union-attr]
            first.queue.broker_name
        )
        assert addr is not None
        conn = producer.instance.pool.registry.lookup(addr)
        assert isinstance(conn, BrokerConnection)
        conn._max_in_flight = 2  # (a full connection on demand)
        started: list[int] = []
        waited: list[int] = []
        requested: list[int] = []
        start_encoded, request_encoded = conn.start_encoded, conn.request_encoded

        # the send loop's own starts only: request_encoded starts again after its waits
        waiting = contextvars.ContextVar("waiting", default=False)  # (each send: a task)

        def counting_start(*args: Any, **kwargs: Any) -> tuple[int, Any] | None:
            got = start_encoded(*args, **kwargs)
            if not waiting.get():
                (started if got is not None else waited).append(1)
            return got

        async def counting_request(
            code: int, encode: Callable[[int], bytes], *args: Any, **kwargs: Any
        ) -> RemotingCommand:
            requested.append(code)
            token = waiting.set(True)
            try:
                return await request_encoded(code, encode, *args, **kwargs)
            finally:
                waiting.reset(token)

        conn.start_encoded = counting_start  # type: ignore[method-assign]
        conn.request_encoded = counting_request  # type: ignore[method-assign]
        results = []

        async def send(n: int) -> None:
            results.append(await producer.send(Message(topic=unique_topic, body=b"m%d" % n)))

        async with anyio.create_task_group() as tg:
            for n in range(40):
                tg.start_soon(send, n)
        assert len(results) == 40 and {r.status for r in results} == {SendStatus.SEND_OK}
        assert started and waited  # both ways were taken, each declined start once
        assert len(requested) == len(waited) and len(started) + len(waited) == 40
        assert conn.pending == 0 and conn.statistics()["in_flight_bytes"] == 0
        bodies = []
        for queue in {r.queue for r in results}:
            offsets = sorted(r.queue_offset for r in results if r.queue == queue)
            got = await pull(producer.instance, queue, expect=len(offsets), offset=offsets[0])
            bodies += [m.body for m in got]
        assert sorted(bodies) == sorted(b"m%d" % n for n in range(40))
