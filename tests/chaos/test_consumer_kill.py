"""Chaos 2: ``kill -9`` one of three consumer processes in a group, mid-stream.

Three processes (``tests/chaos/consumer_process.py``) share a clustering group over six
queues; this process produces keyed messages at a steady pace and records every outcome. Once
the group has settled and consumed for a while, one process gets SIGKILL. Checked: the two
survivors take over the dead one's queues within 25 s; every acknowledged send is received
(lost = 0); duplicates are only what the dead consumer handled since its last offset commit.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import anyio.abc
import pytest
import structlog

from rocketmq_actors.producer import Producer, create_topic
from rocketmq_actors.testing.faults import QueueChecker

from .conftest import ChaosReport
from .workload import produce

pytestmark = [pytest.mark.integration, pytest.mark.chaos, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
QUEUES = 6
PERSIST_INTERVAL = 2.0  # the consumers' offset commit period
TAKEOVER_LIMIT = 25.0


class ConsumerProcess:
    """One consumer process: its receipts file and its latest queue assignment."""

    def __init__(self, process: anyio.abc.Process, receipts: Path) -> None:
        self.process = process
        self.receipts = receipts
        self.assigned: frozenset[int] = frozenset()

    async def follow_stdout(self) -> None:
        assert self.process.stdout is not None
        buffered = b""
        async for chunk in self.process.stdout:
            buffered += chunk
            *lines, buffered = buffered.split(b"\n")
            for line in lines:
                if line.startswith(b"assigned"):
                    self.assigned = frozenset(int(q) for q in line.split()[1:])

    def read(self) -> list[tuple[int, int, float]]:
        """(key, queue id, monotonic time) per handled message, in handling order."""
        if not self.receipts.exists():
            return []
        out = []
        for line in self.receipts.read_text().splitlines():
            key, queue, at = line.split()
            out.append((int(key), int(queue), float(at)))
        return out


@asynccontextmanager
async def consumer_processes(
    count: int, namesrv: str, group: str, topic: str, directory: Path
) -> AsyncIterator[list[ConsumerProcess]]:
    procs: list[ConsumerProcess] = []
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    async with anyio.create_task_group() as tg:
        try:
            for n in range(count):
                receipts = directory / f"receipts-{n}.txt"
                process = await anyio.open_process(
                    [sys.executable, "-m", "tests.chaos.consumer_process", namesrv, group,
                     topic, str(receipts), str(PERSIST_INTERVAL)],
                    stdout=-1, stderr=-3, env=env,  # stdout PIPE, stderr DEVNULL
                )  # fmt: skip
                procs.append(ConsumerProcess(process, receipts))
                tg.start_soon(procs[-1].follow_stdout)
            yield procs
        finally:
            for proc in procs:
                if proc.process.returncode is None:
                    proc.process.send_signal(signal.SIGTERM)
            with anyio.move_on_after(30, shield=True):
                for proc in procs:
                    await proc.process.wait()
            for proc in procs:
                if proc.process.returncode is None:
                    proc.process.kill()
            tg.cancel_scope.cancel()


async def wait_until(condition: Callable[[], bool], what: str, limit: float) -> None:
    """Re-evaluate ``condition()`` every 0.2 s, failing after ``limit``: the state it reads is
    written by other processes (receipt files, assignment lines), so nothing can wake us."""
    with anyio.move_on_after(limit):
        while not condition():  # noqa: ASYNC110 - polling other processes' files
            await anyio.sleep(0.2)
        return
    raise AssertionError(f"{what}: not within {limit} s")


async def test_kill_9_one_of_three_consumer_processes(
    rocketmq_namesrv: str,
    unique_topic: str,
    unique_group: str,
    tmp_path: Path,
    chaos_report: ChaosReport,
) -> None:
    checker = QueueChecker()
    stop_producing = anyio.Event()
    async with Producer(namesrv=rocketmq_namesrv) as producer:
        await create_topic(producer.instance, unique_topic, queues=QUEUES)

        async def paced_produce() -> None:
            key = 0
            while not stop_producing.is_set():  # about 1,000 messages a second
                await produce(producer, unique_topic, range(key, key + 100), checker)
                key += 100
                await anyio.sleep(0.1)

        async with consumer_processes(
            3, rocketmq_namesrv, unique_group, unique_topic, tmp_path
        ) as procs:

            def settled() -> bool:
                sets = [p.assigned for p in procs]
                union: frozenset[int] = frozenset().union(*sets)
                return all(sets) and sum(map(len, sets)) == QUEUES == len(union)

            await wait_until(settled, "three consumers sharing six queues", 60)
            async with anyio.create_task_group() as tg:
                tg.start_soon(paced_produce)
                victim, survivors = procs[0], procs[1:]

                def consuming_for_a_while() -> bool:
                    # every consumer busy, the victim for three commit periods (so that
                    # committed and uncommitted work both exist when it dies)
                    handled = [p.read() for p in procs]
                    span = handled[0][-1][2] - handled[0][0][2] if handled[0] else 0.0
                    return all(len(h) >= 500 for h in handled) and span >= 3 * PERSIST_INTERVAL

                await wait_until(consuming_for_a_while, "every consumer handling", 60)
                victim_queues = victim.assigned
                victim.process.kill()
                killed_at = time.monotonic()
                await victim.process.wait()

                def taken_over() -> dict[int, float]:
                    first: dict[int, float] = {}
                    for p in survivors:
                        for _, queue, at in p.read():
                            if queue in victim_queues and at > killed_at:
                                first[queue] = min(first.get(queue, at), at)
                    return first

                await wait_until(
                    lambda: taken_over().keys() == victim_queues,
                    f"survivors consuming the dead consumer's queues {sorted(victim_queues)}",
                    TAKEOVER_LIMIT + 15,  # (past the bound: a slow takeover is measured)
                )  # fmt: skip
                takeover = max(taken_over().values()) - killed_at
                await wait_until(  # the two survivors carry the whole stream for a while
                    lambda: sum(1 for p in survivors for *_, at in p.read() if at > killed_at)
                    >= 2000,
                    "survivors handling 2,000 messages after the kill", 60,
                )  # fmt: skip
                stop_producing.set()

            def receipts_checked() -> QueueChecker:
                # the receipts are re-read whole each time: a fresh checker per look
                fresh = QueueChecker()
                fresh.outcomes = checker.outcomes
                for p in procs:
                    for key, _, _ in p.read():
                        fresh.record_receive(key)
                return fresh

            await wait_until(
                lambda: not receipts_checked().check().lost,
                "every acknowledged send received", 60,
            )  # fmt: skip
            result = receipts_checked().check()

    handled_by_victim = victim.read()
    since_last_commit = killed_at - PERSIST_INTERVAL - 1.0
    uncommitted = sum(1 for _, _, at in handled_by_victim if at > since_last_commit)
    structlog.get_logger("tests.chaos").info(
        "chaos.kill_consumer.result", sent=result.sent, received=result.received,
        duplicates=result.duplicates, lost=len(result.lost), takeover_s=round(takeover, 2),
        victim_handled=len(handled_by_victim), victim_recent=uncommitted,
    )  # fmt: skip
    chaos_report.record(
        "kill -9 one of three consumer processes", result, recover_s=takeover,
        note="recovered: the survivors consume every queue of the dead one",
    )  # fmt: skip
    # every send acknowledged; the count only shows the kill landed mid-stream (the pace, about
    # 1,000 a second, falls under make test's load: 3,900 seen there)
    assert result.sent["ok"] == sum(result.sent.values()) >= 1000, result.sent
    assert result.lost == (), f"{len(result.lost)} acknowledged sends never received"
    assert result.unexpected == ()
    assert takeover <= TAKEOVER_LIMIT, takeover
    # redelivered: what the dead consumer handled after its last commit, nothing else
    assert result.duplicates <= uncommitted, (result.duplicates, uncommitted)
