"""An idle push consumer sends pulls, offset commits, heartbeats and one consume-stats request
per (broker, topic) a persist tick: nothing per queue on a timer (issue 46). Counted at the
null broker of ``benchmarks.nullbroker``, which counts every request it answers."""

from __future__ import annotations

import anyio
import pytest

from benchmarks.nullbroker import NullBroker
from rocketmq_actors.consumer.push import PushConsumer, PushOptions
from rocketmq_actors.protocol.codes import RequestCode
from rocketmq_actors.protocol.records import MessageExt

# needs a C compiler, not the session cluster; the same on every broker version
pytestmark = [pytest.mark.integration, pytest.mark.once]

QUEUES = 64
TICKS = 6  # persist ticks counted


def _counts(broker: NullBroker) -> dict[int, int]:
    stats = broker.stats()
    assert stats["unknown"] == {}, f"requests the null broker does not know: {stats['unknown']}"
    return {int(code): n for code, n in stats["requests"].items()}


async def _until(broker: NullBroker, code: int, count: int) -> dict[int, int]:
    """The null broker's counts once it has answered ``count`` requests of ``code``."""
    while (counts := await anyio.to_thread.run_sync(_counts, broker)).get(code, 0) < count:  # noqa: ASYNC110 - another process's counters
        await anyio.sleep(0.05)
    return counts


async def _idle(addr: str, broker: NullBroker) -> tuple[dict[int, int], dict[int, int]]:
    async def handle(message: MessageExt) -> None:
        raise AssertionError("nothing is stored")

    stats = RequestCode.GET_CONSUME_STATS
    async with PushConsumer(
        group="idle_group", subscriptions={"idle_topic": "*"}, handler=handle, namesrv=addr,
        options=PushOptions(persist_interval=0.2, pull_suspend=0.2),
    ):  # fmt: skip
        with anyio.fail_after(30):
            await _until(broker, RequestCode.PULL_MESSAGE, QUEUES)  # every queue pulls
            first = await anyio.to_thread.run_sync(_counts, broker)
            # the lag refresh: one a persist tick on this broker and topic
            last = await _until(broker, stats, first.get(stats, 0) + TICKS)
    return first, last


def test_an_idle_consumer_polls_nothing_per_queue() -> None:
    with NullBroker(queues=QUEUES, backlog=0, hold_ms=100) as broker:
        first, last = anyio.run(_idle, broker.addr, broker)
    sent = {code: last.get(code, 0) - first.get(code, 0) for code in last}
    ticks = sent[RequestCode.GET_CONSUME_STATS]
    assert TICKS <= ticks <= TICKS + 2
    assert sent.get(RequestCode.GET_MAX_OFFSET, 0) == 0  # no per-queue offset polling
    assert sent.get(RequestCode.QUERY_CONSUMER_OFFSET, 0) == 0
    assert sent[RequestCode.PULL_MESSAGE] >= QUEUES  # every queue's held pull came back
    # offset commits: only offsets that moved (none here), and all of them every few ticks
    assert sent.get(RequestCode.UPDATE_CONSUMER_OFFSET, 0) <= QUEUES * 2
    expected = {RequestCode.PULL_MESSAGE, RequestCode.UPDATE_CONSUMER_OFFSET,
                RequestCode.GET_CONSUME_STATS, RequestCode.HEART_BEAT,
                RequestCode.GET_ROUTEINFO_BY_TOPIC}  # fmt: skip
    assert {code for code, n in sent.items() if n} <= expected, sent
