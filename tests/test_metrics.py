"""Metrics: the registry, its Prometheus export, and what a send and a consume record."""

from __future__ import annotations

import random
import re
import threading
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from prometheus_client import CollectorRegistry, generate_latest

import rocketmq_actors
from rocketmq_actors.consumer.push import ConsumeFrom, PushConsumer, PushOptions
from rocketmq_actors.metrics import (
    _HELP,
    BUCKETS,
    BUCKETS_OF,
    METRICS,
    Key,
    Metrics,
    Series,
    SeriesCache,
    _Histogram,
)
from rocketmq_actors.producer import Message, Producer, create_topic
from rocketmq_actors.protocol.codes import RequestCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.protocol.records import MessageExt


def _exported(metrics: Metrics) -> str:
    """The registry as Prometheus' text format."""
    registry = CollectorRegistry()
    registry.register(metrics.prometheus_collector())
    return generate_latest(registry).decode()


def test_registry_counts_and_exports_to_prometheus() -> None:
    metrics = Metrics()
    metrics.inc("rocketmq_client_send_total", topic="t", result="ok")
    metrics.inc("rocketmq_client_send_total", 2, topic="t", result="ok")
    metrics.set("rocketmq_client_consumer_lag", 7, group="g", topic="t", broker="b", queue=0)
    for seconds in (0.0004, 0.003, 2.0):
        metrics.observe("rocketmq_client_send_seconds", seconds, topic="t")
    assert metrics.value("rocketmq_client_send_total", topic="t", result="ok") == 3
    assert metrics.count("rocketmq_client_send_seconds", topic="t") == 3
    text = _exported(metrics)
    assert 'rocketmq_client_send_total{result="ok",topic="t"} 3.0' in text
    assert 'rocketmq_client_consumer_lag{broker="b",group="g",queue="0",topic="t"} 7.0' in text
    assert 'rocketmq_client_send_seconds_bucket{le="0.0005",topic="t"} 1.0' in text
    assert 'rocketmq_client_send_seconds_bucket{le="+Inf",topic="t"} 3.0' in text
    assert 'rocketmq_client_send_seconds_count{topic="t"} 3.0' in text


PACKAGE = Path(rocketmq_actors.__file__).parent
ROOT = PACKAGE.parent


def test_every_metric_name_is_prefixed_and_documented() -> None:
    # no clash with the broker exporter's rocketmq_* names (rocketmq-exporter)
    used = set()
    for path in PACKAGE.rglob("*.py"):
        used |= set(re.findall(r"\b(rocketmq_[a-z_]+_(?:total|seconds|lag))\b", path.read_text()))
    assert used == {n for n in _HELP if n.startswith("rocketmq_client_")}
    documented = re.findall(r"^\| `(rocketmq_[a-z_]+)`", (ROOT / "docs/operations.md").read_text(),
                            flags=re.M)  # fmt: skip
    five = {n for n in _HELP if not n.startswith("rocketmq_client_")}  # the 5.x clients' names
    expected = set(_HELP) - {
        "rocketmq_client_connections_closed_total",  # on the opened's row
        "rocketmq_consumer_cached_bytes",
    }  # (on the messages' row)
    assert set(documented) == expected
    assert five == set(BUCKETS_OF) | {"rocketmq_consumer_cached_messages",
                                      "rocketmq_consumer_cached_bytes"}  # fmt: skip
    recorder = (PACKAGE / "clientmetrics.py").read_text()  # (each one is recorded there)
    assert all(f'"{name}"' in recorder for name in five)


def test_the_hot_path_records_into_the_series_the_keyword_calls_read() -> None:
    metrics = Metrics()
    series = metrics.series(
        metrics.key("rocketmq_client_send_total", topic="t", result="ok"),
        metrics.key("rocketmq_client_send_seconds", topic="t"),
    )
    metrics.inc(
        "rocketmq_client_send_total", result="ok", topic="t"
    )  # other label order, same series
    series.add(0.003)
    series.add(2.0)
    assert metrics.value("rocketmq_client_send_total", topic="t", result="ok") == 3
    assert metrics.count("rocketmq_client_send_seconds", topic="t") == 2
    (hist,) = metrics.snapshot()["rocketmq_client_send_seconds"]
    assert hist["labels"] == {"topic": "t"}
    assert hist["sum"] == pytest.approx(2.003)
    (total,) = metrics.snapshot()["rocketmq_client_send_total"]
    assert total == {"labels": {"result": "ok", "topic": "t"}, "value": 3}
    text = _exported(metrics)  # each value in its own bucket
    assert 'rocketmq_client_send_seconds_bucket{le="0.0025",topic="t"} 0.0' in text
    assert 'rocketmq_client_send_seconds_bucket{le="0.005",topic="t"} 1.0' in text
    assert 'rocketmq_client_send_seconds_bucket{le="1.0",topic="t"} 1.0' in text
    assert 'rocketmq_client_send_seconds_bucket{le="2.5",topic="t"} 2.0' in text


def test_a_handler_call_counts_its_messages_and_observes_once() -> None:
    metrics = Metrics()
    series = metrics.series(
        metrics.key("rocketmq_client_consume_total", group="g", topic="t", result="ok"),
        metrics.key("rocketmq_client_consume_seconds", group="g", topic="t"),
    )
    series.add(0.002, 16)  # one call of a batch handler
    series.add(0.001)
    assert metrics.value("rocketmq_client_consume_total", group="g", topic="t", result="ok") == 17
    assert metrics.count("rocketmq_client_consume_seconds", group="g", topic="t") == 2


def _consume_series(metrics: Metrics) -> Series:
    return metrics.series(
        metrics.key("rocketmq_client_consume_total", group="g", topic="t", result="ok"),
        metrics.key("rocketmq_client_consume_seconds", group="g", topic="t"),
    )


def test_calls_folded_in_together_fill_the_buckets_one_by_one_would() -> None:
    metrics = Metrics()
    series = _consume_series(metrics)
    assert _consume_series(metrics) is series  # (one a pair of keys: one queue of calls)
    one_by_one = _Histogram()
    rng = random.Random(7)
    values = [*BUCKETS, *(rng.uniform(0, 12) for _ in range(500)), 0.0, 99.0]  # (bounds too)
    for value in values:
        series.add(value)
        one_by_one.observe(value)
    (hist,) = metrics.snapshot()["rocketmq_client_consume_seconds"]  # (a read folds them)
    assert hist["count"] == len(values) and hist["sum"] == pytest.approx(sum(values))
    assert series.histogram.counts == one_by_one.counts


def test_a_scrape_folds_in_the_calls_queued_since_the_last_read() -> None:
    metrics = Metrics()
    series = _consume_series(metrics)
    series.add(0.003)
    series.add(2.0, 4)  # (a batch handler's call of four messages)
    text = _exported(metrics)
    assert 'rocketmq_client_consume_total{group="g",result="ok",topic="t"} 5.0' in text
    assert 'rocketmq_client_consume_seconds_count{group="g",topic="t"} 2.0' in text
    assert 'rocketmq_client_consume_seconds_bucket{group="g",le="0.005",topic="t"} 1.0' in text
    series.add(0.001)  # (listed again after the scrape's fold)
    assert 'rocketmq_client_consume_seconds_count{group="g",topic="t"} 3.0' in _exported(metrics)


def test_a_series_nobody_reads_folds_its_calls_in_every_fold_at() -> None:
    metrics = Metrics()
    series = _consume_series(metrics)
    for _ in range(Series.FOLD_AT - 1):
        series.add(0.001)
    assert series.histogram.count == 0  # (queued: no read, no fold yet)
    series.add(0.001, 3)
    assert series.histogram.count == Series.FOLD_AT  # (the writer folded: nothing grows)
    assert series.counter.value == Series.FOLD_AT + 2


def test_calls_from_several_threads_are_all_counted_while_read() -> None:
    metrics = Metrics()
    series = _consume_series(metrics)
    calls, threads = 20_000, 4

    def write() -> None:
        for i in range(calls):
            series.add(0.001, 2 if i % 3 == 0 else 1)

    def read() -> None:
        while any(t.is_alive() for t in writers):
            metrics.snapshot()

    writers = [threading.Thread(target=write) for _ in range(threads)]
    reader = threading.Thread(target=read)
    for thread in [*writers, reader]:
        thread.start()
    for thread in [*writers, reader]:
        thread.join()
    expected = threads * (calls + len(range(0, calls, 3)))
    assert metrics.value("rocketmq_client_consume_total", group="g", topic="t",
                         result="ok") == expected  # fmt: skip
    assert metrics.count("rocketmq_client_consume_seconds", group="g", topic="t") == (
        threads * calls
    )


def _send_keys(metrics: Metrics, topic: str) -> tuple[Key, Key]:
    return (metrics.key("rocketmq_client_send_total", topic=topic, result="ok"),
            metrics.key("rocketmq_client_send_seconds", topic=topic))  # fmt: skip


def test_series_cache_builds_once_per_topic_and_stays_bounded() -> None:
    metrics = Metrics()
    built: list[str] = []

    def build(topic: str) -> tuple[Key, Key]:
        built.append(topic)
        return _send_keys(metrics, topic)

    cache = SeriesCache(build, metrics)
    assert cache.get("a") is None
    first = cache.add("a")
    assert cache.get("a") is first
    first.add(0.001)
    assert metrics.value("rocketmq_client_send_total", topic="a", result="ok") == 1
    for i in range(1023):
        cache.add(f"t{i}")
    assert cache.get("a") is first  # 1024 topics held
    cache.add("one-more")  # the 1025th empties the cache first
    assert cache.get("a") is None and cache.get("one-more") is not None
    assert built.count("a") == 1
    assert cache.add("a") == first  # built again: the registry's same objects


def test_a_reset_empties_the_caches_so_later_updates_are_counted() -> None:
    metrics = Metrics()
    cache = SeriesCache(lambda topic: _send_keys(metrics, topic), metrics)
    (cache.get("t") or cache.add("t")).add(0.001)
    metrics.reset()
    assert metrics.snapshot() == {}
    assert cache.get("t") is None  # (its series were the registry's before the reset)
    (cache.get("t") or cache.add("t")).add(0.002)
    assert metrics.value("rocketmq_client_send_total", topic="t", result="ok") == 1
    assert metrics.count("rocketmq_client_send_seconds", topic="t") == 1


@pytest.mark.integration
async def test_a_send_and_a_consume_are_recorded(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    done = anyio.Event()

    async def handle(message: MessageExt) -> None:
        done.set()

    async with Producer(namesrv=rocketmq_namesrv, group=f"{unique_group}_producer") as producer:
        await create_topic(producer.instance, unique_topic, queues=1)
        await producer.send(Message(topic=unique_topic, body=b"m"))
    assert METRICS.value("rocketmq_client_send_total", topic=unique_topic, result="ok") == 1
    assert METRICS.count("rocketmq_client_send_seconds", topic=unique_topic) == 1
    async with PushConsumer(
        group=unique_group,
        subscriptions={unique_topic: "*"},
        handler=handle,
        namesrv=rocketmq_namesrv,
        options=PushOptions(consume_from=ConsumeFrom.FIRST_OFFSET),
    ):  # fmt: skip
        with anyio.fail_after(30):
            await done.wait()
    labels = {"group": unique_group, "topic": unique_topic}
    assert METRICS.value("rocketmq_client_consume_total", result="ok", **labels) == 1
    assert METRICS.count("rocketmq_client_consume_seconds", **labels) == 1
    # a stopped consumer reports no lag (a gauge that never moves again would read as lag)
    assert not [s for s in METRICS.snapshot().get("rocketmq_client_consumer_lag", [])
                if s["labels"]["group"] == unique_group]  # fmt: skip


def _lag(group: str, topic: str) -> float | None:
    found = [s["value"] for s in METRICS.snapshot().get("rocketmq_client_consumer_lag", [])
             if s["labels"]["group"] == group and s["labels"]["topic"] == topic]  # fmt: skip
    return found[0] if found else None


class Refreshes:
    """Tells each end of the consumer's lag refresh (the gauge changes on a timer)."""

    def __init__(self, consumer: PushConsumer, monkeypatch: pytest.MonkeyPatch) -> None:
        self._done = anyio.Event()
        self.count = 0
        refresh = consumer._group.lag.refresh

        async def refresh_and_tell() -> None:
            await refresh()
            self.count += 1
            self._done.set()
            self._done = anyio.Event()

        monkeypatch.setattr(consumer._group.lag, "refresh", refresh_and_tell)

    async def until(self, condition: Callable[[], bool], seconds: float = 15.0) -> None:
        with anyio.fail_after(seconds):
            while not condition():
                await self._done.wait()


@pytest.mark.integration
async def test_the_lag_gauge_moves_while_the_consumer_does_not_pull(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[bytes] = []
    release = anyio.Event()
    first = anyio.Event()

    async def handle(message: MessageExt) -> None:
        calls.append(message.body)
        first.set()
        await release.wait()

    async with Producer(namesrv=rocketmq_namesrv, group=f"{unique_group}_producer") as producer:
        await create_topic(producer.instance, unique_topic, queues=1)
        async with PushConsumer(
            group=unique_group,
            subscriptions={unique_topic: "*"},
            handler=handle,
            namesrv=rocketmq_namesrv,
            options=PushOptions(consume_from=ConsumeFrom.FIRST_OFFSET, max_cached_messages=1,
                                persist_interval=0.2, pull_suspend=30.0),
        ) as consumer:  # fmt: skip
            refreshes = Refreshes(consumer, monkeypatch)
            await producer.send(Message(topic=unique_topic, body=b"first"))
            with anyio.fail_after(30):
                await first.wait()
            # one message in the handler fills the cache: flow control, no pull from now on
            for i in range(5):
                await producer.send(Message(topic=unique_topic, body=b"%d" % i))
            await refreshes.until(lambda: _lag(unique_group, unique_topic) == 6)
            assert calls == [b"first"]  # seen without any of the five delivered
            release.set()
            await refreshes.until(lambda: len(calls) == 6)
            # consumed, and idle: the consumer's pull is held by the broker for 30 s, yet
            await refreshes.until(lambda: _lag(unique_group, unique_topic) == 0, seconds=10.0)


@pytest.mark.integration
async def test_an_idle_consumers_lag_refresh_asks_each_broker_once_not_each_queue(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """16 queues, idle: each refresh is one GET_CONSUME_STATS per (broker, topic) - the topic
    and the group's retry topic - and no GET_MAX_OFFSET; every queue's gauge is set."""
    queues = 16
    async with Producer(namesrv=rocketmq_namesrv, group=f"{unique_group}_producer") as producer:
        await create_topic(producer.instance, unique_topic, queues=queues)

    async def handle(message: MessageExt) -> None: ...

    async with PushConsumer(
        group=unique_group, subscriptions={unique_topic: "*"}, handler=handle,
        namesrv=rocketmq_namesrv,
        options=PushOptions(persist_interval=0.2, pull_suspend=30.0),
    ) as consumer:  # fmt: skip
        refreshes = Refreshes(consumer, monkeypatch)
        await refreshes.until(lambda: _lag_series(unique_group, unique_topic) == queues)
        codes: list[int] = []
        request = consumer.instance.request

        async def counted(
            addr: str, cmd: RemotingCommand, timeout: float | None = None, *, slot: bool = False
        ) -> RemotingCommand:
            codes.append(cmd.code)
            return await request(addr, cmd, timeout, slot=slot)

        monkeypatch.setattr(consumer.instance, "request", counted)
        started = refreshes.count
        await refreshes.until(lambda: refreshes.count >= started + 3)
        monkeypatch.setattr(consumer.instance, "request", request)
    assert RequestCode.GET_MAX_OFFSET not in codes
    # three refreshes, and the start and end of a fourth: at most 2 topics x 4 on one broker
    assert 3 <= codes.count(RequestCode.GET_CONSUME_STATS) <= 2 * 4 < queues


def _lag_series(group: str, topic: str) -> int:
    return len([s for s in METRICS.snapshot().get("rocketmq_client_consumer_lag", [])
                if s["labels"]["group"] == group and s["labels"]["topic"] == topic])  # fmt: skip
