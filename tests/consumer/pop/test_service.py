"""The POP consume service without a broker: a popper cancelled while the work queue is full
leaves the flow-control count right, and a message whose invisible time ran out while it
waited is not consumed (Java's ``isPopTimeout``: the broker may have given it to another
member)."""

from __future__ import annotations

import time
from typing import Any

import anyio

from rocketmq_actors.consumer.core.dispatch import Dispatcher
from rocketmq_actors.consumer.core.message import ReceivedMessage
from rocketmq_actors.consumer.pop.service import PopConsumeService
from rocketmq_actors.protocol.pop import ExtraInfo
from rocketmq_actors.protocol.records import MessageExt


def message(offset: int) -> ReceivedMessage[bytes]:
    return ReceivedMessage(
        topic="T", body=b"m", raw_properties=b"", queue_id=0, queue_offset=offset,
        commit_log_offset=0, sys_flag=0, flag=0, born_timestamp=0, born_ip=b"\x7f\0\0\1",
        born_port=1, store_timestamp=0, store_ip=b"\x7f\0\0\1", store_port=2,
        reconsume_times=0, prepared_transaction_offset=0, body_crc=0,
    )  # fmt: skip


def handle(offset: int, *, popped_ms_ago: int = 0, invisible_ms: int = 60_000) -> ExtraInfo:
    pop_time = time.time_ns() // 1_000_000 - popped_ms_ago
    return ExtraInfo(ck_queue_offset=0, pop_time=pop_time, invisible_time=invisible_ms,
                     revive_qid=1, retry="0", broker_name="a", queue_id=0,
                     queue_offset=offset)  # fmt: skip


class Owner:
    group = "G"
    max_reconsume_times = 16
    retry_delay = None
    suspend_delay = 1.0
    instance: Any = None
    stopping = False

    def __init__(self) -> None:
        self.flow = 0

    async def send_back(self, message: MessageExt, delay_level: int) -> bool:
        return True

    def flow_changed(self) -> None:
        self.flow += 1


class Acks:
    def __init__(self) -> None:
        self.acked: list[int | None] = []

    def add(self, topic: str, handle: ExtraInfo) -> None:
        self.acked.append(handle.queue_offset)


def service(handled: list[int], **options: Any) -> tuple[PopConsumeService, Owner, Acks]:
    async def handler(m: ReceivedMessage[bytes]) -> None:
        handled.append(m.queue_offset)

    dispatcher = Dispatcher("G", handler=handler, batch_handler=None, consume_timeout=None,
                            tracing=None, fail=lambda exc: None)  # fmt: skip
    owner, acks = Owner(), Acks()
    options.setdefault("concurrency", 1)
    svc = PopConsumeService(owner, dispatcher, acks, consume_batch_size=1, orderly=False,  # type: ignore[arg-type]
                            **options)  # fmt: skip
    return svc, owner, acks


async def test_a_popper_cancelled_on_a_full_queue_counts_only_what_it_queued() -> None:
    svc, owner, _ = service([])  # no worker runs: the queue (room for 2) fills
    popped = [(message(i), handle(i)) for i in range(5)]
    with anyio.move_on_after(0.2):  # (the popper's cancellation: its broker left the route)
        await svc.accept("T", popped)
    assert svc.cached == 2 and owner.flow == 1  # the 3 not queued were never cached
    svc.close()


async def test_a_message_whose_invisible_time_ran_out_is_not_consumed() -> None:
    handled: list[int] = []
    svc, _, acks = service(handled)
    async with anyio.create_task_group() as tg:
        await tg.start(svc.run)
        await svc.accept("T", [(message(1), handle(1, popped_ms_ago=61_000))])
        await svc.accept("T", [(message(2), handle(2))])
        with anyio.fail_after(5):
            while acks.acked != [2]:  # noqa: ASYNC110 - the worker's ack is the only signal
                await anyio.sleep(0.01)
        svc.close()
    assert handled == [2] and svc.expired == 1 and svc.cached == 0
