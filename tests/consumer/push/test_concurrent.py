"""The concurrent consume service without a broker: a queue actor puts a pull's messages on the
work queue and goes on to its next pull while the workers consume, for several pulls at once
(the room is bounded); the workers share a pull's messages, and the process queue forgets them
together once the last is done."""

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


def _pull(first: int, count: int, queue_id: int = 0) -> list[MessageExt]:
    records = [encode_stored(topic="T", body=b"m", queue_offset=first + i, queue_id=queue_id)
               for i in range(count)]  # fmt: skip
    return [decode_records(record, ReceivedMessage)[0] for record in records]


def _service(consume_batch_size: int) -> ConcurrentConsumeService:
    async def handle(message: Any) -> None:
        raise AssertionError("no worker runs in these tests")

    dispatcher = Dispatcher("G", handler=handle, batch_handler=None, consume_timeout=None,
                            tracing=None, fail=lambda exc: None)  # fmt: skip
    return ConcurrentConsumeService(_Owner(), dispatcher, concurrency=2,
                                    consume_batch_size=consume_batch_size, consume_timeout=None,
                                    local_retry_delay=1.0)  # fmt: skip


@pytest.mark.parametrize("consume_batch_size", [1, 16, 5])
async def test_eight_pulls_are_taken_without_waiting_for_a_worker(consume_batch_size: int) -> None:
    # (with room for twice the workers' batches only, the second pull's hand-off waited for
    # them, and the queue actor's next pull with it; a pull is one share whatever the batch)
    service = _service(consume_batch_size)
    pq = ProcessQueue(QUEUE, 0)
    for pull in range(8):
        with anyio.fail_after(10):  # no worker runs: a hand-off that waits never ends
            await service.accept(pq, _pull(pull * 32, 32))
    # and the room ends there: what comes next waits for the workers (flow control)
    assert len(service.work) == service.work.capacity == 8


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
                                       consume_timeout=None, local_retry_delay=1.0)  # fmt: skip
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


class _Counting(_Owner):
    """An owner with offsets, whose send-backs fail when told to; it counts flow signals."""

    def __init__(self, *, send_back_ok: bool = True) -> None:
        from rocketmq_actors.consumer.core.offsets import OffsetStore

        self.offsets = OffsetStore()
        self.send_back_ok = send_back_ok
        self.flow_signals = 0

    async def send_back(self, message: MessageExt, delay_level: int) -> bool:
        return self.send_back_ok

    def flow_changed(self) -> None:
        self.flow_signals += 1


def _running(owner: _Owner, handle: Any, concurrency: int) -> ConcurrentConsumeService:
    dispatcher = Dispatcher("G", handler=handle, batch_handler=None, consume_timeout=None,
                            tracing=None, fail=lambda exc: None)  # fmt: skip
    return ConcurrentConsumeService(owner, dispatcher, concurrency=concurrency,
                                    consume_batch_size=1, consume_timeout=None,
                                    local_retry_delay=0.01)  # fmt: skip


async def test_the_messages_of_one_pull_are_consumed_at_once_and_forgotten_together() -> None:
    owner = _Counting()
    all_in = anyio.Event()
    inside: list[int] = []

    async def handle(message: Any) -> None:
        inside.append(message.queue_offset)
        if len(inside) == 3:
            all_in.set()
        await all_in.wait()  # each holds its worker until all three handlers run

    service = _running(owner, handle, concurrency=3)
    pq = ProcessQueue(QUEUE, 0)
    with anyio.fail_after(10):  # (one worker a pull would never let the three meet)
        async with anyio.create_task_group() as tg:
            await tg.start(service.run)
            await service.accept(pq, pq.put(_pull(0, 3)))
            await all_in.wait()
            await anyio.wait_all_tasks_blocked()
            service.close()
    assert sorted(inside) == [0, 1, 2]
    # once the last was done: one commit past all three, one flow signal
    assert (owner.offsets.read(QUEUE), pq.count, owner.flow_signals) == (3, 0, 1)


async def test_a_message_retried_here_holds_the_offset_while_the_rest_are_forgotten() -> None:
    owner = _Counting(send_back_ok=False)  # the broker refuses the send-back: retried here
    seen_on_retry: list[tuple[int | None, int]] = []
    retried = anyio.Event()

    async def handle(message: Any) -> None:
        if message.queue_offset == 1:
            if message.reconsume_times == 0:
                raise RuntimeError("first delivery fails")
            seen_on_retry.append((owner.offsets.read(QUEUE), pq.count))
            retried.set()

    service = _running(owner, handle, concurrency=2)
    pq = ProcessQueue(QUEUE, 0)
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            await tg.start(service.run)
            await service.accept(pq, pq.put(_pull(0, 3)))
            await retried.wait()
            await anyio.wait_all_tasks_blocked()
            service.close()
    # on the retry the other two were forgotten, and the offset stayed at the retried one
    assert seen_on_retry == [(1, 1)] and service.local_retries == 1
    assert (owner.offsets.read(QUEUE), pq.count) == (3, 0)


async def test_a_message_in_a_cancelled_handler_is_consumed_after_the_restart() -> None:
    owner = _Counting()
    handled: list[int] = []
    stuck = anyio.Event()
    restarted = False

    async def handle(message: Any) -> None:
        if message.queue_offset == 1 and not restarted:
            stuck.set()
            await anyio.sleep_forever()  # until the service is cancelled under it
        handled.append(message.queue_offset)

    service = _running(owner, handle, concurrency=3)
    pq = ProcessQueue(QUEUE, 0)
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:  # the service's first life
            await tg.start(service.run)
            await service.accept(pq, pq.put(_pull(0, 3)))
            await stuck.wait()
            await anyio.wait_all_tasks_blocked()
            tg.cancel_scope.cancel()  # (a supervisor's restart, say)
        # the other two are consumed; the one cancelled waits in front, still cached
        assert sorted(handled) == [0, 2]
        assert (len(service.work), pq.count, owner.offsets.read(QUEUE)) == (1, 1, 1)
        restarted = True
        async with anyio.create_task_group() as tg:
            await tg.start(service.run)
            await anyio.wait_all_tasks_blocked()
            service.close()
    assert sorted(handled) == [0, 1, 2]
    assert (owner.offsets.read(QUEUE), pq.count) == (3, 0)


async def test_what_was_not_taken_when_the_consumer_stops_stays_unconsumed() -> None:
    owner = _Counting()
    handled: list[int] = []

    async def handle(message: Any) -> None:
        handled.append(message.queue_offset)
        owner.stopping = True  # (the consumer stops while this handler runs)

    service = _running(owner, handle, concurrency=1)
    pq = ProcessQueue(QUEUE, 0)
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            await tg.start(service.run)
            await service.accept(pq, pq.put(_pull(0, 3)))
            await anyio.wait_all_tasks_blocked()
            service.close()
    # the one consumed is committed; the two after it stay cached, to be delivered again
    assert handled == [0]
    assert (owner.offsets.read(QUEUE), pq.count, len(service.work)) == (1, 2, 0)


async def test_small_pulls_of_several_queues_are_consumed_at_once() -> None:
    owner = _Counting()
    all_in = anyio.Event()
    inside: list[tuple[int, int]] = []

    async def handle(message: Any) -> None:
        inside.append((message.queue_id, message.queue_offset))
        if len(inside) == 6:
            all_in.set()
        await all_in.wait()  # each holds its worker until all six handlers run

    service = _running(owner, handle, concurrency=6)
    queues = [ProcessQueue(MessageQueue("T", "broker-a", q), 0) for q in range(3)]
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            await tg.start(service.run)
            for pq in queues:  # three pulls of two, as queue actors hand them over
                await service.accept(pq, pq.put(_pull(0, 2, queue_id=pq.queue.queue_id)))
            await all_in.wait()
            await anyio.wait_all_tasks_blocked()
            service.close()
    assert sorted(inside) == [(q, o) for q in range(3) for o in range(2)]


async def test_a_handler_past_consume_timeout_is_sent_back_and_its_pull_committed() -> None:
    owner = _Counting()
    sent_back: list[int] = []
    back = anyio.Event()

    async def send_back(message: MessageExt, delay_level: int) -> bool:
        sent_back.append(message.queue_offset)
        back.set()
        return True

    owner.send_back = send_back  # type: ignore[method-assign]

    async def handle(message: Any) -> None:
        if message.queue_offset == 1:
            await anyio.sleep_forever()  # until the sweeper cancels it

    dispatcher = Dispatcher("G", handler=handle, batch_handler=None, consume_timeout=None,
                            tracing=None, fail=lambda exc: None)  # fmt: skip
    service = ConcurrentConsumeService(owner, dispatcher, concurrency=2, consume_batch_size=1,
                                       consume_timeout=0.2, local_retry_delay=0.01)  # fmt: skip
    pq = ProcessQueue(QUEUE, 0)
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            await tg.start(service.run)
            await service.accept(pq, pq.put(_pull(0, 3)))
            await back.wait()
            while pq.count:  # (settled right after the send-back, on the worker's next step)
                await anyio.wait_all_tasks_blocked()
            tg.cancel_scope.cancel()
    assert sent_back == [1] and dispatcher.failed == 1
    assert (owner.offsets.read(QUEUE), pq.count) == (3, 0)


async def test_a_send_back_cut_off_by_a_restart_is_consumed_after_it() -> None:
    owner = _Counting()
    sending = anyio.Event()
    restarted = False
    handled: list[int] = []

    async def send_back(message: MessageExt, delay_level: int) -> bool:
        sending.set()
        await anyio.sleep_forever()  # the broker does not answer before the restart
        raise AssertionError

    owner.send_back = send_back  # type: ignore[method-assign]

    async def handle(message: Any) -> None:
        if message.queue_offset == 1 and not restarted:
            raise RuntimeError("fails the first time")
        handled.append(message.queue_offset)

    service = _running(owner, handle, concurrency=3)
    pq = ProcessQueue(QUEUE, 0)
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            await tg.start(service.run)
            await service.accept(pq, pq.put(_pull(0, 3)))
            await sending.wait()
            await anyio.wait_all_tasks_blocked()
            tg.cancel_scope.cancel()  # (a supervisor's restart, say)
        # the other two are forgotten; the one whose send-back was cut off waits in front
        assert (len(service.work), pq.count, owner.offsets.read(QUEUE)) == (1, 1, 1)
        restarted = True
        async with anyio.create_task_group() as tg:
            await tg.start(service.run)
            await anyio.wait_all_tasks_blocked()
            service.close()
    assert sorted(handled) == [0, 1, 2]
    assert (owner.offsets.read(QUEUE), pq.count) == (3, 0)


async def test_a_batch_handler_gets_the_pull_in_consume_batch_size_slices() -> None:
    owner = _Counting()
    calls: list[list[int]] = []

    async def handle(messages: list[Any]) -> None:
        calls.append([m.queue_offset for m in messages])

    dispatcher = Dispatcher("G", handler=None, batch_handler=handle, consume_timeout=None,
                            tracing=None, fail=lambda exc: None)  # fmt: skip
    service = ConcurrentConsumeService(owner, dispatcher, concurrency=2, consume_batch_size=2,
                                       consume_timeout=None, local_retry_delay=0.01)  # fmt: skip
    pq = ProcessQueue(QUEUE, 0)
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            await tg.start(service.run)
            await service.accept(pq, pq.put(_pull(0, 5)))
            await anyio.wait_all_tasks_blocked()
            service.close()
    assert sorted(calls) == [[0, 1], [2, 3], [4]]
    assert (owner.offsets.read(QUEUE), pq.count, owner.flow_signals) == (5, 0, 1)


async def test_an_undecodable_message_goes_back_alone_and_the_rest_are_consumed() -> None:
    owner = _Counting()
    sent_back: list[int] = []

    async def send_back(message: MessageExt, delay_level: int) -> bool:
        sent_back.append(message.queue_offset)
        return True

    owner.send_back = send_back  # type: ignore[method-assign]
    handled: list[int] = []

    async def handle(message: Any) -> None:
        handled.append(message.queue_offset)

    service = _running(owner, handle, concurrency=2)
    pq = ProcessQueue(QUEUE, 0)
    messages = _pull(0, 3)
    messages[1].decode_error = "unsupported compression"
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            await tg.start(service.run)
            await service.accept(pq, pq.put(messages))
            await anyio.wait_all_tasks_blocked()
            service.close()
    assert sorted(handled) == [0, 2] and sent_back == [1]
    assert (owner.offsets.read(QUEUE), pq.count) == (3, 0)


async def test_a_handler_that_returns_as_the_sweeper_cancels_it_has_not_timed_out() -> None:
    # (the sweeper cancels a worker whose handler has just been woken to return: the
    # cancellation reaches the worker at its next wait, which was the next message's handler)
    owner = _Counting()
    sent_back: list[int] = []

    async def send_back(message: MessageExt, delay_level: int) -> bool:
        sent_back.append(message.queue_offset)
        return True

    owner.send_back = send_back  # type: ignore[method-assign]
    entered, release = anyio.Event(), anyio.Event()
    handled: list[int] = []

    async def handle(message: Any) -> None:
        if message.queue_offset == 0:
            entered.set()
            await release.wait()
        else:
            await anyio.lowlevel.checkpoint()  # (a handler that waits for anything)
        handled.append(message.queue_offset)

    dispatcher = Dispatcher("G", handler=handle, batch_handler=None, consume_timeout=None,
                            tracing=None, fail=lambda exc: None)  # fmt: skip
    service = ConcurrentConsumeService(owner, dispatcher, concurrency=1, consume_batch_size=1,
                                       consume_timeout=900.0, local_retry_delay=0.01)  # fmt: skip
    pq = ProcessQueue(QUEUE, 0)
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            await tg.start(service.run)
            await service.accept(pq, pq.put(_pull(0, 2)))
            await entered.wait()
            release.set()  # the handler is woken to return ...
            (worker,) = service._workers
            worker.timed_out = True  # ... as the sweeper (past its timeout) cancels it
            assert worker.scope is not None
            worker.scope.cancel()
            await anyio.wait_all_tasks_blocked()
            tg.cancel_scope.cancel()
    assert handled == [0, 1] and sent_back == [] and dispatcher.failed == 0
    assert (owner.offsets.read(QUEUE), pq.count) == (2, 0)


async def test_a_restart_as_the_sweeper_cancels_a_handler_gives_its_message_back() -> None:
    owner = _Counting()
    stuck = anyio.Event()
    restarted = False
    handled: list[int] = []

    async def handle(message: Any) -> None:
        if message.queue_offset == 0 and not restarted:
            stuck.set()
            await anyio.sleep_forever()
        handled.append(message.queue_offset)

    dispatcher = Dispatcher("G", handler=handle, batch_handler=None, consume_timeout=None,
                            tracing=None, fail=lambda exc: None)  # fmt: skip
    service = ConcurrentConsumeService(owner, dispatcher, concurrency=1, consume_batch_size=1,
                                       consume_timeout=900.0, local_retry_delay=0.01)  # fmt: skip
    pq = ProcessQueue(QUEUE, 0)
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            await tg.start(service.run)
            await service.accept(pq, pq.put(_pull(0, 2)))
            await stuck.wait()
            (worker,) = service._workers
            assert worker.scope is not None
            worker.timed_out = True  # the sweeper cancels the handler ...
            worker.scope.cancel()
            tg.cancel_scope.cancel()  # ... as the service restarts
        # the message in the handler waits in front, and the one not taken behind it
        assert (len(service.work), pq.count, owner.offsets.read(QUEUE)) == (2, 2, None)
        restarted = True
        async with anyio.create_task_group() as tg:
            await tg.start(service.run)
            await anyio.wait_all_tasks_blocked()
            tg.cancel_scope.cancel()  # (the sweeper runs until then)
    assert handled == [0, 1] and dispatcher.failed == 0
    assert (owner.offsets.read(QUEUE), pq.count) == (2, 0)


async def test_a_local_retry_cut_off_by_a_restart_is_consumed_after_it() -> None:
    owner = _Counting(send_back_ok=False)  # the broker refuses the send-back: retried here
    restarted = False
    handled: list[int] = []

    async def handle(message: Any) -> None:
        if message.queue_offset == 1 and not restarted:
            raise RuntimeError("fails the first time")
        handled.append(message.queue_offset)

    dispatcher = Dispatcher("G", handler=handle, batch_handler=None, consume_timeout=None,
                            tracing=None, fail=lambda exc: None)  # fmt: skip
    service = ConcurrentConsumeService(owner, dispatcher, concurrency=2, consume_batch_size=1,
                                       consume_timeout=None, local_retry_delay=600.0)  # fmt: skip
    pq = ProcessQueue(QUEUE, 0)
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            await tg.start(service.run)
            await service.accept(pq, pq.put(_pull(0, 3)))
            await anyio.wait_all_tasks_blocked()  # (the retry waits out its 600 s)
            assert service.local_retries == 1
            tg.cancel_scope.cancel()  # a restart, long before the retry was due
        assert (len(service.work), pq.count, owner.offsets.read(QUEUE)) == (1, 1, 1)
        restarted = True
        async with anyio.create_task_group() as tg:
            await tg.start(service.run)
            await anyio.wait_all_tasks_blocked()
            service.close()
    assert sorted(handled) == [0, 1, 2]
    assert (owner.offsets.read(QUEUE), pq.count) == (3, 0)
