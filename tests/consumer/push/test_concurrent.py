"""The concurrent consume service without a broker: a queue actor puts a pull's messages on the
work queue and goes on to its next pull while the workers consume, for several pulls at once
(the room is bounded); the workers share a pull's messages, and the process queue forgets them
together once the last is done."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from anyio.abc import TaskGroup

from rocketmq_actors.consumer.core.dispatch import Dispatcher
from rocketmq_actors.consumer.core.message import ReceivedMessage
from rocketmq_actors.consumer.core.process_queue import ProcessQueue
from rocketmq_actors.consumer.core.settlement import DelayLevel, MessageAlreadySettled
from rocketmq_actors.consumer.push.concurrent import ConcurrentConsumeService
from rocketmq_actors.hooks import ConsumeContext, consume_hooks
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
    """An owner with offsets that records its send-backs (refused, or never answered, when
    told) and counts flow signals."""

    def __init__(self, *, send_back_ok: bool = True, send_back_hangs: bool = False) -> None:
        from rocketmq_actors.consumer.core.offsets import OffsetStore

        self.offsets = OffsetStore()
        self.send_back_ok = send_back_ok
        self.send_back_hangs = send_back_hangs
        self.sent_back: list[int] = []
        self.levels: list[int] = []
        self.sending = anyio.Event()
        self.flow_signals = 0

    async def send_back(self, message: MessageExt, delay_level: int) -> bool:
        self.sent_back.append(message.queue_offset)
        self.levels.append(delay_level)
        self.sending.set()
        if self.send_back_hangs:
            await anyio.sleep_forever()
        return self.send_back_ok

    def flow_changed(self) -> None:
        self.flow_signals += 1


def _running(
    owner: _Owner, handle: Any, concurrency: int, *, batch_size: int = 1,
    consume_timeout: float | None = None, local_retry_delay: float = 0.01, **dispatch: Any,
) -> ConcurrentConsumeService:  # fmt: skip
    """The service over ``handle`` (a batch handler when ``batch_size`` is above 1);
    ``dispatch``: the dispatcher's other options (namespace, hooks, fail)."""
    batched = batch_size > 1
    dispatch.setdefault("fail", lambda exc: None)
    dispatcher = Dispatcher("G", handler=None if batched else handle,
                            batch_handler=handle if batched else None, consume_timeout=None,
                            tracing=None, **dispatch)  # fmt: skip
    return ConcurrentConsumeService(owner, dispatcher, concurrency=concurrency,
                                    consume_batch_size=batch_size,
                                    consume_timeout=consume_timeout,
                                    local_retry_delay=local_retry_delay)  # fmt: skip


async def _life(
    service: ConcurrentConsumeService,
    pulls: Sequence[tuple[ProcessQueue, list[MessageExt]]] = (),
    *,
    until: anyio.Event | None = None,
    then: Callable[[TaskGroup], None] | None = None,
    restart: bool = False,
) -> None:
    """One life of the service: started, handed ``pulls`` as queue actors hand them over, run
    until ``until`` is set (then ``then(task_group)``) and every task waits; then closed, or
    cancelled as a supervisor's restart (``restart``: also what ends a sweeper)."""
    with anyio.fail_after(10):  # (a hand-off or a settlement that never ends fails the test)
        async with anyio.create_task_group() as tg:
            await tg.start(service.run)
            for pq, messages in pulls:
                await service.accept(pq, pq.put(messages))
            if until is not None:
                await until.wait()
            if then is not None:
                then(tg)
            await anyio.wait_all_tasks_blocked()
            if restart:
                tg.cancel_scope.cancel()
            else:
                service.close()


def _meeting(count: int, seen: list[Any], what: Callable[[Any], Any]) -> Any:
    """A handler that records ``what(message)`` and holds its worker until ``count`` handlers
    run at once (they never would if one worker took a whole pull: the deadline fails)."""
    all_in = anyio.Event()

    async def handle(message: Any) -> None:
        seen.append(what(message))
        if len(seen) == count:
            all_in.set()
        await all_in.wait()

    return handle


def _offset(message: Any) -> int:
    return int(message.queue_offset)


async def test_the_messages_of_one_pull_are_consumed_at_once_and_forgotten_together() -> None:
    owner, inside = _Counting(), list[int]()
    service = _running(owner, _meeting(3, inside, _offset), concurrency=3)
    pq = ProcessQueue(QUEUE, 0)
    await _life(service, [(pq, _pull(0, 3))])
    assert sorted(inside) == [0, 1, 2]
    # once the last was done: one commit past all three, one flow signal
    assert (owner.offsets.read(QUEUE), pq.count, owner.flow_signals) == (3, 0, 1)


async def test_small_pulls_of_several_queues_are_consumed_at_once() -> None:
    inside: list[tuple[int, int]] = []
    handle = _meeting(6, inside, lambda m: (m.queue_id, m.queue_offset))
    service = _running(_Counting(), handle, concurrency=6)
    queues = [ProcessQueue(MessageQueue("T", "broker-a", q), 0) for q in range(3)]
    await _life(service, [(pq, _pull(0, 2, queue_id=pq.queue.queue_id)) for pq in queues])
    assert sorted(inside) == [(q, o) for q in range(3) for o in range(2)]


async def test_a_message_retried_here_holds_the_offset_while_the_rest_are_forgotten() -> None:
    owner = _Counting(send_back_ok=False)  # the broker refuses the send-back: retried here
    seen_on_retry: list[tuple[int | None, int]] = []
    retried = anyio.Event()
    pq = ProcessQueue(QUEUE, 0)

    async def handle(message: Any) -> None:
        if message.queue_offset == 1:
            if message.reconsume_times == 0:
                raise RuntimeError("first delivery fails")
            seen_on_retry.append((owner.offsets.read(QUEUE), pq.count))
            retried.set()

    service = _running(owner, handle, concurrency=2)
    await _life(service, [(pq, _pull(0, 3))], until=retried)
    # on the retry the other two were forgotten, and the offset stayed at the retried one
    assert seen_on_retry == [(1, 1)] and service.local_retries == 1
    assert (owner.offsets.read(QUEUE), pq.count) == (3, 0)


async def test_a_message_nacked_by_a_handler_that_returns_is_sent_back_with_its_delay() -> None:
    owner = _Counting()

    async def handle(message: Any) -> None:
        if message.queue_offset == 1:
            message.nack(delay=DelayLevel(4))  # and returns: the nack wins

    service = _running(owner, handle, concurrency=2)
    pq = ProcessQueue(QUEUE, 0)
    await _life(service, [(pq, _pull(0, 3))])
    assert (owner.sent_back, owner.levels) == ([1], [4])
    assert (service.dispatcher.consumed, service.dispatcher.failed) == (2, 1)
    assert (owner.offsets.read(QUEUE), pq.count) == (3, 0)  # sent back: consumed here


async def test_a_retried_message_reaches_the_handler_under_its_own_topic() -> None:
    topics: list[str] = []

    async def handle(message: Any) -> None:
        topics.append(message.topic)

    record = encode_stored(topic="%RETRY%G", body=b"m", properties={"RETRY_TOPIC": "T"})
    retried: list[MessageExt] = [decode_records(record, ReceivedMessage)[0]]
    service = _running(_Counting(), handle, concurrency=1)
    await _life(service, [(ProcessQueue(MessageQueue("%RETRY%G", "broker-a", 0), 0), retried)])
    assert topics == ["T"]


async def test_a_namespace_consumers_handler_sees_the_topic_without_it() -> None:
    topics: list[str] = []

    async def handle(message: Any) -> None:
        topics.append(message.topic)

    wrapped: list[MessageExt] = [
        decode_records(encode_stored(topic="ns%T", body=b"m"), ReceivedMessage)[0]
    ]
    service = _running(_Counting(), handle, concurrency=1, namespace="ns")
    await _life(service, [(ProcessQueue(MessageQueue("ns%T", "broker-a", 0), 0), wrapped)])
    assert topics == ["T"]


class _Recorder:
    """A consume hook that records each call's offsets, status and error."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[int], str | None, str | None]] = []

    def before_consume(self, context: ConsumeContext) -> None:
        pass

    def after_consume(self, context: ConsumeContext) -> None:
        error = None if context.error is None else type(context.error).__name__
        self.calls.append(([m.queue_offset for m in context.messages], context.status, error))


async def test_the_hooks_see_each_handler_call_of_a_worker() -> None:
    recorder = _Recorder()

    async def handle(message: Any) -> None:
        if message.queue_offset == 1:
            raise RuntimeError("fails")

    service = _running(_Counting(), handle, concurrency=1, hooks=consume_hooks([recorder]))
    await _life(service, [(ProcessQueue(QUEUE, 0), _pull(0, 2))])
    assert sorted(recorder.calls) == [
        ([0], "SUCCESS", None), ([1], "EXCEPTION", "RuntimeError"),
    ]  # fmt: skip


async def test_a_settlement_after_the_handler_returned_is_refused() -> None:
    kept: list[Any] = []

    async def handle(message: Any) -> None:
        kept.append(message)

    service = _running(_Counting(), handle, concurrency=1)
    await _life(service, [(ProcessQueue(QUEUE, 0), _pull(0, 1))])
    with pytest.raises(MessageAlreadySettled):
        kept[0].nack()


async def test_an_interrupt_in_a_handler_stops_the_consumer_and_leaves_its_message() -> None:
    owner, stops, interrupted = _Counting(), list[BaseException](), list[Any]()
    interrupt = KeyboardInterrupt()

    async def handle(message: Any) -> None:
        if message.queue_offset == 1:
            interrupted.append(message)
            raise interrupt

    service = _running(owner, handle, concurrency=1, fail=stops.append)
    pq = ProcessQueue(QUEUE, 0)
    await _life(service, [(pq, _pull(0, 3))])
    assert stops == [interrupt]  # the consumer is told to stop, with it
    # the others were consumed; the interrupted one stays unconsumed and holds the offset
    assert (service.dispatcher.consumed, service.dispatcher.failed) == (2, 0)
    assert (owner.offsets.read(QUEUE), pq.count, owner.sent_back) == (1, 1, [])
    with pytest.raises(MessageAlreadySettled):  # its delivery ended, unsettled
        interrupted[0].ack()


async def test_a_stop_waiting_for_the_handlers_goes_on_once_the_last_ends() -> None:
    entered, release, idle = anyio.Event(), anyio.Event(), anyio.Event()

    async def handle(message: Any) -> None:
        entered.set()
        await release.wait()

    service = _running(_Counting(), handle, concurrency=1)

    async def stop_when_idle() -> None:
        await entered.wait()
        await service.dispatcher.wait_idle()  # (a stop's drain)
        idle.set()

    async def release_it(tg: TaskGroup) -> None:
        await anyio.wait_all_tasks_blocked()  # (the drain waits on the handler)
        assert not idle.is_set()
        release.set()

    def then(tg: TaskGroup) -> None:
        tg.start_soon(release_it, tg)

    async with anyio.create_task_group() as outer:
        outer.start_soon(stop_when_idle)
        await _life(service, [(ProcessQueue(QUEUE, 0), _pull(0, 1))], until=entered, then=then)
        with anyio.fail_after(10):
            await idle.wait()


class _Restarts:
    """A handler that fails the first delivery of ``offset`` (``stuck``: never ends it instead)
    until the service is restarted."""

    def __init__(self, offset: int, *, stuck: bool = False) -> None:
        self.offset, self.stuck = offset, stuck
        self.restarted = False
        self.handled: list[int] = []
        self.entered = anyio.Event()

    async def __call__(self, message: Any) -> None:
        if message.queue_offset == self.offset and not self.restarted:
            self.entered.set()
            if self.stuck:
                await anyio.sleep_forever()  # until the service is cancelled under it
            raise RuntimeError("fails the first time")
        self.handled.append(message.queue_offset)


async def _restarted(
    service: ConcurrentConsumeService, handle: _Restarts, *, restart: bool = False
) -> None:
    """The service's second life, after a restart: ``handle`` no longer fails."""
    handle.restarted = True
    await _life(service, restart=restart)


async def test_a_message_in_a_cancelled_handler_is_consumed_after_the_restart() -> None:
    owner, handle = _Counting(), _Restarts(1, stuck=True)
    service = _running(owner, handle, concurrency=3)
    pq = ProcessQueue(QUEUE, 0)
    await _life(service, [(pq, _pull(0, 3))], until=handle.entered, restart=True)
    # the other two are consumed; the one cancelled waits in front, still cached
    assert sorted(handle.handled) == [0, 2]
    assert (len(service.work), pq.count, owner.offsets.read(QUEUE)) == (1, 1, 1)
    await _restarted(service, handle)
    assert sorted(handle.handled) == [0, 1, 2]
    assert (owner.offsets.read(QUEUE), pq.count) == (3, 0)


async def test_a_send_back_cut_off_by_a_restart_is_consumed_after_it() -> None:
    owner, handle = _Counting(send_back_hangs=True), _Restarts(1)
    service = _running(owner, handle, concurrency=3)
    pq = ProcessQueue(QUEUE, 0)
    await _life(service, [(pq, _pull(0, 3))], until=owner.sending, restart=True)
    # the other two are forgotten; the one whose send-back was cut off waits in front
    assert (len(service.work), pq.count, owner.offsets.read(QUEUE)) == (1, 1, 1)
    await _restarted(service, handle)
    assert sorted(handle.handled) == [0, 1, 2]
    assert (owner.offsets.read(QUEUE), pq.count) == (3, 0)


async def test_a_local_retry_cut_off_by_a_restart_is_consumed_after_it() -> None:
    owner, handle = _Counting(send_back_ok=False), _Restarts(1)  # (retried here)
    service = _running(owner, handle, concurrency=2, local_retry_delay=600.0)
    pq = ProcessQueue(QUEUE, 0)
    # a restart while the retry waits out its 600 s
    await _life(service, [(pq, _pull(0, 3))], restart=True)
    assert service.local_retries == 1
    assert (len(service.work), pq.count, owner.offsets.read(QUEUE)) == (1, 1, 1)
    await _restarted(service, handle)
    assert sorted(handle.handled) == [0, 1, 2]
    assert (owner.offsets.read(QUEUE), pq.count) == (3, 0)


async def test_what_was_not_taken_when_the_consumer_stops_stays_unconsumed() -> None:
    owner = _Counting()
    handled: list[int] = []

    async def handle(message: Any) -> None:
        handled.append(message.queue_offset)
        owner.stopping = True  # (the consumer stops while this handler runs)

    service = _running(owner, handle, concurrency=1)
    pq = ProcessQueue(QUEUE, 0)
    await _life(service, [(pq, _pull(0, 3))])
    # the one consumed is committed; the two after it stay cached, to be delivered again
    assert handled == [0]
    assert (owner.offsets.read(QUEUE), pq.count, len(service.work)) == (1, 2, 0)


async def test_a_handler_past_consume_timeout_is_sent_back_and_its_pull_committed() -> None:
    owner = _Counting()

    async def handle(message: Any) -> None:
        if message.queue_offset == 1:
            await anyio.sleep_forever()  # until the sweeper cancels it

    service = _running(owner, handle, concurrency=2, consume_timeout=0.2)
    pq = ProcessQueue(QUEUE, 0)
    await _life(service, [(pq, _pull(0, 3))], until=owner.sending, restart=True)
    assert owner.sent_back == [1] and service.dispatcher.failed == 1
    assert (owner.offsets.read(QUEUE), pq.count) == (3, 0)


async def test_a_handler_that_returns_as_the_sweeper_cancels_it_has_not_timed_out() -> None:
    # (the sweeper cancels a worker whose handler has just been woken to return: the
    # cancellation reached the worker at its next wait, which was the next message's handler)
    owner = _Counting()
    entered, release = anyio.Event(), anyio.Event()
    handled: list[int] = []

    async def handle(message: Any) -> None:
        if message.queue_offset == 0:
            entered.set()
            await release.wait()
        else:
            await anyio.lowlevel.checkpoint()  # (a handler that waits for anything)
        handled.append(message.queue_offset)

    service = _running(owner, handle, concurrency=1, consume_timeout=900.0)

    def returning_as_the_sweeper_cancels(tg: TaskGroup) -> None:
        release.set()  # the handler is woken to return ...
        _sweeper_cancels(service)  # ... as the sweeper (past its timeout) cancels it

    pq = ProcessQueue(QUEUE, 0)
    await _life(service, [(pq, _pull(0, 2))], until=entered,
                then=returning_as_the_sweeper_cancels, restart=True)  # fmt: skip
    assert handled == [0, 1] and owner.sent_back == [] and service.dispatcher.failed == 0
    assert (owner.offsets.read(QUEUE), pq.count) == (2, 0)


def _sweeper_cancels(service: ConcurrentConsumeService) -> None:
    """What the sweeper does to the one worker whose handler ran past ``consume_timeout``."""
    (worker,) = service._workers
    assert worker.scope is not None
    worker.timed_out = True
    worker.scope.cancel()


async def test_a_restart_as_the_sweeper_cancels_a_handler_gives_its_message_back() -> None:
    owner, handle = _Counting(), _Restarts(0, stuck=True)
    service = _running(owner, handle, concurrency=1, consume_timeout=900.0)

    def restart_as_the_sweeper_cancels(tg: TaskGroup) -> None:
        _sweeper_cancels(service)
        tg.cancel_scope.cancel()

    pq = ProcessQueue(QUEUE, 0)
    await _life(service, [(pq, _pull(0, 2))], until=handle.entered,
                then=restart_as_the_sweeper_cancels)  # fmt: skip
    # the message in the handler waits in front, and the one not taken behind it
    assert (len(service.work), pq.count, owner.offsets.read(QUEUE)) == (2, 2, None)
    await _restarted(service, handle, restart=True)  # (the sweeper runs until then)
    assert handle.handled == [0, 1] and service.dispatcher.failed == 0
    assert (owner.offsets.read(QUEUE), pq.count) == (2, 0)


async def test_a_batch_handler_gets_the_pull_in_consume_batch_size_slices() -> None:
    owner = _Counting()
    calls: list[list[int]] = []

    async def handle(messages: list[Any]) -> None:
        calls.append([m.queue_offset for m in messages])

    service = _running(owner, handle, concurrency=2, batch_size=2)
    pq = ProcessQueue(QUEUE, 0)
    await _life(service, [(pq, _pull(0, 5))])
    assert sorted(calls) == [[0, 1], [2, 3], [4]]
    assert (owner.offsets.read(QUEUE), pq.count, owner.flow_signals) == (5, 0, 1)


async def test_an_undecodable_message_goes_back_alone_and_the_rest_are_consumed() -> None:
    owner = _Counting()
    handled: list[int] = []

    async def handle(message: Any) -> None:
        handled.append(message.queue_offset)

    service = _running(owner, handle, concurrency=2)
    pq = ProcessQueue(QUEUE, 0)
    messages = _pull(0, 3)
    messages[1].decode_error = "unsupported compression"
    await _life(service, [(pq, messages)])
    assert sorted(handled) == [0, 2] and owner.sent_back == [1]
    assert (owner.offsets.read(QUEUE), pq.count) == (3, 0)
