"""What the chaos tests share: a keyed produce workload and a consumer that records receipts,
both feeding the chaos-suite checkers."""

from __future__ import annotations

import os

import anyio

from rocketmq_actors.errors import RocketMQError
from rocketmq_actors.producer import Message, Producer
from rocketmq_actors.protocol.records import MessageExt
from rocketmq_actors.testing.faults import Outcome, QueueChecker


def outcome_of(exc: RocketMQError) -> Outcome:
    return Outcome.UNKNOWN if exc.outcome_unknown else Outcome.FAILED


async def produce(
    producer: Producer,
    topic: str,
    keys: range,
    checker: QueueChecker,
    *,
    in_flight: int = 64,
    progress: anyio.Event | None = None,
    progress_at: int = 0,
) -> None:
    """Send one message per key with ``in_flight`` sends outstanding; record every outcome
    (typed: ok, failed, unknown). ``progress`` is set once ``progress_at`` sends settled."""
    settled = 0
    window = anyio.Semaphore(in_flight)

    async def one(key: int) -> None:
        nonlocal settled
        try:
            await producer.send(Message(topic=topic, body=b"%d" % key, keys=[str(key)]))
            checker.record_send(key, Outcome.OK)
        except RocketMQError as exc:
            checker.record_send(key, outcome_of(exc))
        finally:
            window.release()
            settled += 1
            if progress is not None and settled >= progress_at:
                progress.set()

    async with anyio.create_task_group() as tg:
        for key in keys:
            await window.acquire()
            tg.start_soon(one, key)


class Receipts:
    """A handler recording every delivery in a checker; ``wait_for_all`` wakes on progress."""

    def __init__(self, checker: QueueChecker) -> None:
        self.checker = checker
        self._changed = anyio.Event()

    async def handle(self, message: MessageExt) -> None:
        self.checker.record_receive(int(message.keys[0]))
        self._changed.set()
        self._changed = anyio.Event()

    async def wait_for_all_acknowledged(self, timeout: float) -> None:
        """Until every acknowledged send was received (or ``timeout``, then the check fails)."""
        with anyio.move_on_after(timeout):
            while self.checker.unreceived:  # O(1) per receipt (check() walks every key)
                await self._changed.wait()


def tasks_now() -> int:
    return len(anyio.get_running_tasks())


def fds_now() -> int:
    return len(os.listdir("/proc/self/fd"))
