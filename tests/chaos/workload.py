"""What the chaos tests share: a keyed produce workload and a consumer that records receipts,
both feeding the chaos-suite checkers."""

from __future__ import annotations

import itertools
import os
import time

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


class SendTimeline:
    """When each acknowledged send completed; ``acked`` wakes waiters at every one."""

    def __init__(self) -> None:
        self.ok_at: list[float] = []
        self.ok_on: list[str] = []  # the broker name of each
        self.acked = anyio.Event()

    def record_ok(self, broker: str = "") -> None:
        self.ok_at.append(time.monotonic())
        self.ok_on.append(broker)
        self.acked.set()
        self.acked = anyio.Event()

    def oks_since(self, moment: float, broker: str | None = None) -> int:
        return sum(
            1
            for t, b in zip(self.ok_at, self.ok_on, strict=True)
            if t > moment and broker in (None, b)
        )

    def first_ok_since(self, moment: float, broker: str | None = None) -> float | None:
        """Seconds from ``moment`` to the first acknowledged send (on ``broker``) after it."""
        for t, b in zip(self.ok_at, self.ok_on, strict=True):
            if t > moment and broker in (None, b):
                return t - moment
        return None

    def longest_gap(self, since: float) -> float:
        """The longest time without an acknowledged send from the last one before ``since``
        to the last one recorded (the fault's outage, as a client under load saw it)."""
        start, end = self.longest_gap_span(since)
        return end - start

    def longest_gap_span(self, since: float) -> tuple[float, float]:
        """When that longest gap began and ended (the acknowledgements around it)."""
        before = [t for t in self.ok_at if t <= since]
        times = [before[-1] if before else since] + [t for t in self.ok_at if t > since]
        return max(itertools.pairwise(times), key=lambda ab: ab[1] - ab[0], default=(since, since))

    async def wait_oks_since(
        self, moment: float, count: int, timeout: float, broker: str | None = None
    ) -> None:
        with anyio.fail_after(timeout):
            while self.oks_since(moment, broker) < count:
                await self.acked.wait()


async def produce_until(
    producer: Producer,
    topic: str,
    checker: QueueChecker,
    timeline: SendTimeline,
    stop: anyio.Event,
    *,
    in_flight: int = 16,
    first_key: int = 0,
) -> int:
    """One send loop until ``stop``: consecutive keys, ``in_flight`` outstanding, every
    outcome recorded (ok, failed, unknown). A failed send is followed by a 50 ms pause of
    its slot (a client backing off, so a broker-less minute is not a million failures).
    Returns the next unused key."""
    window = anyio.Semaphore(in_flight)
    key = first_key

    async def one(key: int) -> None:
        try:
            result = await producer.send(Message(topic=topic, body=b"%d" % key, keys=[str(key)]))
            checker.record_send(key, Outcome.OK)
            timeline.record_ok(result.queue.broker_name)
        except RocketMQError as exc:
            checker.record_send(key, outcome_of(exc))
            await anyio.sleep(0.05)  # pacing of a failing client, not synchronization
        finally:
            window.release()

    async with anyio.create_task_group() as tg:
        while not stop.is_set():
            await window.acquire()
            if stop.is_set():
                window.release()
                break
            tg.start_soon(one, key)
            key += 1
    return key
