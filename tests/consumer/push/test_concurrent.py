"""The concurrent consume service's hand-off from the queue actors, without a broker: a queue
actor puts a pull's messages on the work queue and goes on to its next pull while the workers
consume, for several pulls at once; the room is bounded."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from rocketmq_actors.consumer.core.dispatch import Dispatcher
from rocketmq_actors.consumer.core.message import ReceivedMessage
from rocketmq_actors.consumer.core.process_queue import ProcessQueue
from rocketmq_actors.consumer.push.concurrent import ConcurrentConsumeService
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.records import MessageExt, decode_records
from rocketmq_actors.testing.stored import encode_stored

QUEUE = MessageQueue("T", "broker-a", 0)


class _Owner:
    retry_delay_level = 0
    clustering = True
    stopping = False
    offsets: Any = None

    async def send_back(self, message: MessageExt, delay_level: int) -> bool:
        raise AssertionError("nothing fails here")

    def flow_changed(self) -> None:
        pass


def _pull(first: int, count: int) -> list[MessageExt]:
    records = [encode_stored(topic="T", body=b"m", queue_offset=first + i) for i in range(count)]
    return [decode_records(record, ReceivedMessage)[0] for record in records]


def _service(consume_batch_size: int) -> ConcurrentConsumeService:
    async def handle(message: Any) -> None:
        raise AssertionError("no worker runs in these tests")

    dispatcher = Dispatcher("G", handler=handle, batch_handler=None, consume_timeout=None,
                            tracing=None, fail=lambda exc: None)  # fmt: skip
    return ConcurrentConsumeService(_Owner(), dispatcher, concurrency=2,
                                    consume_batch_size=consume_batch_size, consume_timeout=None,
                                    local_retry_delay=1.0, pull_batch_size=32)  # fmt: skip


@pytest.mark.parametrize(("consume_batch_size", "items"), [(1, 256), (16, 16), (5, 56)])
async def test_eight_pulls_are_taken_without_waiting_for_a_worker(
    consume_batch_size: int, items: int
) -> None:
    # (with room for twice the workers only, the second pull's hand-off waited for them,
    # and the queue actor's next pull with it)
    service = _service(consume_batch_size)
    pq = ProcessQueue(QUEUE, 0)
    for pull in range(8):
        with anyio.fail_after(10):  # no worker runs: a hand-off that waits never ends
            await service.accept(pq, _pull(pull * 32, 32))
    assert len(service.work) == items
    # and the room ends there: what comes next waits for the workers (flow control)
    assert not service.work.offer((pq, _pull(256, 1)))


async def test_a_worker_times_each_handler_call_from_its_own_start() -> None:
    from rocketmq_actors.consumer.core.offsets import OffsetStore
    from rocketmq_actors.metrics import METRICS

    group = f"G-timed-{id(object())}"
    done = anyio.Event()
    handled = 0

    async def handle(message: Any) -> None:
        nonlocal handled
        await anyio.sleep(0.05)  # (a handler's own work, not a wait for the test)
        handled += 1
        if handled == 3:
            done.set()

    owner = _Owner()
    owner.offsets = OffsetStore()
    dispatcher = Dispatcher(group, handler=handle, batch_handler=None, consume_timeout=None,
                            tracing=None, fail=lambda exc: None)  # fmt: skip
    service = ConcurrentConsumeService(owner, dispatcher, concurrency=2, consume_batch_size=1,
                                       consume_timeout=None, local_retry_delay=1.0,
                                       pull_batch_size=32)  # fmt: skip
    pq = ProcessQueue(QUEUE, 0)
    async with anyio.create_task_group() as tg:
        await tg.start(service.run)
        messages = _pull(0, 3)
        await service.accept(pq, pq.put(messages))
        with anyio.fail_after(10):
            await done.wait()
        service.close()
    (series,) = [s for s in METRICS.snapshot()["rocketmq_client_consume_seconds"]
                 if s["labels"]["group"] == group]  # fmt: skip
    # each call from its worker's clock reading as it took the message: at least the
    # handler's sleep, and nowhere near the clock's own value (a reading of 0 would be)
    assert series["count"] == 3
    assert 3 * 0.05 <= series["sum"] < 30
    assert owner.offsets.read(QUEUE) == 3
