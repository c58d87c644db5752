"""Client metrics with stable names: counters, gauges and histograms kept in process.

Read them with :meth:`Metrics.snapshot`, or export them to Prometheus (``pip install
'rocketmq-actors[prometheus]'``)::

    from prometheus_client import REGISTRY
    from rocketmq_actors.metrics import METRICS
    REGISTRY.register(METRICS.prometheus_collector())

Every name starts with ``rocketmq_client_`` (the RocketMQ broker exporter's are ``rocketmq_*``:
the two can share a Prometheus without a clash; up to 0.1.0.dev0 they were ``rocketmq_*`` here
too).

| name (kind) | labels | what |
|---|---|---|
| ``rocketmq_client_send_total`` (counter) | topic, result (ok, failed) | sends that ended |
| ``rocketmq_client_send_seconds`` (histogram) | topic | time to the answer of sends ok |
| ``rocketmq_client_send_retries_total`` (counter) | topic | attempts retried elsewhere |
| ``rocketmq_client_auto_batches_total`` (counter) | topic | auto-batching's frames, stored |
| ``rocketmq_client_auto_batched_total`` (counter) | topic | the messages in them |
| ``rocketmq_client_connections_opened_total`` (counter) | addr | opened (more: reconnects) |
| ``rocketmq_client_connections_closed_total`` (counter) | addr | closed or lost |
| ``rocketmq_client_consume_total`` (counter) | group, topic, result (ok, failed) | handled |
| ``rocketmq_client_consume_seconds`` (histogram) | group, topic | handler time per call |
| ``rocketmq_client_consumer_lag`` (gauge) | group, topic, broker, queue | past the committed |
| ``rocketmq_client_trace_records_total`` (counter) | group, result (sent, failed) | trace records |
| ``rocketmq_client_trace_dropped_total`` (counter) | group | trace records dropped: queue full |

With ``ClientOptions(client_metrics=True)``, the RocketMQ 5.x clients' metrics too, under their
names, units (milliseconds) and buckets, so that a dashboard built for the Java or Go client
reads ours (:mod:`rocketmq_actors.clientmetrics`).

Updating a metric is a cached key, a lock and a dictionary update; on the send and consume
paths, an append to the cached series, folded in under the lock many at a time
(:class:`Series`; benchmarks/producer.py and benchmarks/consumer.py run with metrics on);
nothing is exported unless asked.
"""

from __future__ import annotations

import bisect
import threading
import weakref
from collections import deque
from collections.abc import Callable, Iterator
from itertools import repeat
from operator import call as _call
from typing import Any

from rocketmq_actors.extras import require

__all__ = ["METRICS", "Metrics", "Series", "SeriesCache"]

Key = tuple[str, tuple[tuple[str, str], ...]]

BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

_HELP = {
    "rocketmq_client_send_total": "sends that ended, by result",
    "rocketmq_client_send_seconds": "time to the broker's answer of successful sends",
    "rocketmq_client_send_retries_total": "send attempts retried",
    "rocketmq_client_auto_batches_total": "batch frames auto-batching sent and had stored",
    "rocketmq_client_auto_batched_total": "messages auto-batching sent in them",
    "rocketmq_client_connections_opened_total": "broker and NameServer connections opened",
    "rocketmq_client_connections_closed_total": "broker and NameServer connections closed or lost",
    "rocketmq_client_consume_total": "messages handled, by result",
    "rocketmq_client_consume_seconds": "handler time per call",
    "rocketmq_client_consumer_lag": "messages stored past the committed offset",
    "rocketmq_client_trace_records_total": "message trace records sent or lost, by result",
    "rocketmq_client_trace_dropped_total": "message trace records dropped: the queue was full",
    "rocketmq_send_cost_time": "send time in milliseconds, by invocation status",
    "rocketmq_delivery_latency": "milliseconds from a message's store to its arrival here",
    "rocketmq_await_time": "milliseconds a message waited here before its handler",
    "rocketmq_process_time": "handler time in milliseconds, by invocation status",
    "rocketmq_consumer_cached_messages": "messages pulled and not consumed yet",
    "rocketmq_consumer_cached_bytes": "bytes of messages pulled and not consumed yet",
}


#: histograms with buckets of their own (the RocketMQ 5.x clients', in milliseconds)
BUCKETS_OF: dict[str, tuple[float, ...]] = {
    "rocketmq_send_cost_time": (1.0, 5.0, 10.0, 20.0, 50.0, 200.0, 500.0),
    "rocketmq_delivery_latency": (1.0, 5.0, 10.0, 20.0, 50.0, 200.0, 500.0),
    "rocketmq_await_time": (1.0, 5.0, 20.0, 100.0, 1000.0, 5000.0, 10000.0),
    "rocketmq_process_time": (1.0, 5.0, 10.0, 100.0, 1000.0, 10000.0, 60000.0),
}


_bisect_left = bisect.bisect_left  # (a module global: one lookup less a value observed)
_bisect_right = bisect.bisect_right


class _Histogram:
    __slots__ = ("bounds", "count", "counts", "sum")

    def __init__(self, bounds: tuple[float, ...] = BUCKETS) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.count = 0
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.counts[_bisect_left(self.bounds, value)] += 1
        self.count += 1
        self.sum += value

    def observe_all(self, values: list[float]) -> None:
        """:meth:`observe` each of ``values`` (sorted here, in place: no NaN among them)."""
        values.sort()
        counts, below = self.counts, 0
        for i, bound in enumerate(self.bounds):  # (a bucket holds values up to its bound)
            upto = _bisect_right(values, bound, below)
            counts[i] += upto - below
            below = upto
        counts[-1] += len(values) - below
        self.count += len(values)
        self.sum += sum(values)


class _Counter:
    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0.0


class Series:
    """A counter and a histogram a hot path updates together, once a call (a send's answer, a
    handler call): :meth:`add`. A call's value is queued without the registry's lock (a deque
    takes appends from any thread safely) and folded in under it, in one step for many, by any
    read of the registry (which folds only the series with calls queued: they list themselves)
    and by the writer every ``FOLD_AT`` calls: a lock a call cost more than the update
    (benchmarks/nullbroker.py, path d)."""

    __slots__ = ("_listed", "_metrics", "_values", "counter", "histogram")

    #: calls a series queues at most before its writer folds them in
    FOLD_AT = 1024

    def __init__(self, metrics: Metrics, counter: _Counter, histogram: _Histogram) -> None:
        self._metrics = metrics
        self.counter = counter
        self.histogram = histogram
        self._values: deque[float] = deque()  # a duration a call (never NaN)
        self._listed = False  # on the registry's list of series to fold

    def add(self, value: float, amount: float = 1) -> None:
        """One call: ``amount`` more on the counter, ``value`` on the histogram."""
        values = self._values
        values.append(value)
        if amount != 1:  # (a batch handler's call: its amount past one, under the lock)
            self._metrics._count_extra(self, amount - 1)
        # listed after the append: a reader that unlisted it before taking either takes this
        # value or is seen to have unlisted it (and it is listed again)
        if not self._listed:
            self._listed = True
            self._metrics._dirty.append(self)
        if len(values) >= self.FOLD_AT:
            self._metrics._fold_one(self)

    def _fold(self) -> None:
        """Move the queued values into the counter and histogram (the registry's lock held:
        the one taker; writers only append, so the values counted here are the ones taken)."""
        values = self._values
        taken = list(map(_call, repeat(values.popleft, len(values))))
        if taken:
            self.counter.value += len(taken)
            self.histogram.observe_all(taken)


class SeriesCache:
    """A hot path's series per topic, the registry's objects themselves, built once by
    ``build`` (the series' keys): an update then looks nothing up (hashing a series' key, a
    nested tuple, costs more than the update: benchmarks/nullbroker.py, path b).

    The lookup is the dictionary's own ``get`` (no Python call on the hot path)::

        series = cache.get(topic) or cache.add(topic)

    A client of many topics stays bounded: the cache is emptied at 1024 topics, and by
    :meth:`Metrics.reset`.
    """

    __slots__ = ("__weakref__", "_build", "_metrics", "_series", "get")

    def __init__(
        self, build: Callable[[str], tuple[Key, Key]], metrics: Metrics | None = None
    ) -> None:
        self._build = build
        self._metrics = METRICS if metrics is None else metrics
        self._series: dict[str, Series] = {}
        self.get = self._series.get
        self._metrics.watch(self)

    def add(self, topic: str) -> Series:
        keys = self._build(topic)
        # (looked up and kept under the registry's lock: a reset cannot fall in between)
        return self._metrics.series(*keys, cache=(self._series, topic))

    def clear(self) -> None:
        self._series.clear()


class Metrics:
    def __init__(self) -> None:
        self._counters: dict[Key, _Counter] = {}
        self._gauges: dict[Key, float] = {}
        self._histograms: dict[Key, _Histogram] = {}
        self._keys: dict[tuple[Any, ...], Key] = {}
        self._series: dict[tuple[Key, Key], Series] = {}  # (hot paths' calls queue in them)
        self._dirty: deque[Series] = deque()  # the series with calls queued (some twice)
        self._lock = threading.Lock()  # producers in portal threads share the registry
        self.caches: weakref.WeakSet[SeriesCache] = weakref.WeakSet()  # emptied by reset()

    def _key(self, name: str, labels: dict[str, Any]) -> Key:
        # a call site passes its labels in one order: cache the canonical key by that order
        # (sorting and str() on every update showed in benchmarks/producer.py's send paths
        # and benchmarks/consumer.py's consume paths)
        raw = (name, *labels.items())
        key = self._keys.get(raw)
        if key is None:
            key = self._keys[raw] = (name, tuple(sorted((k, str(v)) for k, v in labels.items())))
        return key

    def inc(self, name: str, value: float = 1.0, **labels: Any) -> None:
        key = self._key(name, labels)
        with self._lock:
            counter = self._counters.get(key)
            if counter is None:
                counter = self._counters[key] = _Counter()
            counter.value += value

    def set(self, name: str, value: float, **labels: Any) -> None:
        key = self._key(name, labels)
        with self._lock:
            self._gauges[key] = value

    def observe(self, name: str, value: float, **labels: Any) -> None:
        key = self._key(name, labels)
        with self._lock:
            histogram = self._histograms.get(key)
            if histogram is None:
                histogram = self._histograms[key] = _Histogram(BUCKETS_OF.get(name, BUCKETS))
            histogram.observe(value)

    def key(self, name: str, **labels: Any) -> Key:
        """The canonical key of a series (a :class:`SeriesCache` builds a hot path's series
        from them)."""
        return self._key(name, labels)

    def series(
        self, counter: Key, histogram: Key, *, cache: tuple[dict[str, Series], str] | None = None
    ) -> Series:
        """The registry's counter and histogram of these keys (made if new), for a hot path
        to update with :meth:`Series.add`; ``cache``: also kept in that dictionary
        under that topic (a :class:`SeriesCache`'s: emptied at 1024 topics)."""
        with self._lock:
            count = self._counters.get(counter)
            if count is None:
                count = self._counters[counter] = _Counter()
            hist = self._histograms.get(histogram)
            if hist is None:
                hist = self._histograms[histogram] = _Histogram()
            series = self._series.get((counter, histogram))
            if series is None:
                series = self._series[counter, histogram] = Series(self, count, hist)
            if cache is not None:
                cached, topic = cache
                if len(cached) >= 1024:
                    cached.clear()
                cached[topic] = series
        return series

    def watch(self, cache: SeriesCache) -> None:
        """Empty ``cache`` at each :meth:`reset` (its series are the registry's objects)."""
        with self._lock:
            self.caches.add(cache)

    def _fold_one(self, series: Series) -> None:
        """Fold in what ``series`` has queued (its writer, every ``Series.FOLD_AT`` calls)."""
        with self._lock:
            series._fold()

    def _count_extra(self, series: Series, amount: float) -> None:
        with self._lock:
            series.counter.value += amount

    def _fold_all(self) -> None:
        """Fold in the queued calls of every series listed (a reader, the lock held)."""
        dirty = self._dirty
        for _ in range(len(dirty)):
            series = dirty.popleft()
            series._listed = False  # (before taking: see Series.add)
            series._fold()

    def value(self, name: str, **labels: Any) -> float:
        """A counter's or gauge's current value (0 if never touched)."""
        key = self._key(name, labels)
        with self._lock:
            self._fold_all()
            counter = self._counters.get(key)
            return counter.value if counter is not None else self._gauges.get(key, 0.0)

    def count(self, name: str, **labels: Any) -> int:
        """How many values a histogram has seen."""
        with self._lock:
            self._fold_all()
            histogram = self._histograms.get(self._key(name, labels))
            return histogram.count if histogram else 0

    def snapshot(self) -> dict[str, list[dict[str, Any]]]:
        """Every series by name: ``{"labels": {...}, "value": v}`` for counters and gauges,
        ``{"labels": {...}, "count": n, "sum": s}`` for histograms."""
        out: dict[str, list[dict[str, Any]]] = {}
        with self._lock:
            self._fold_all()
            counters = [(key, counter.value) for key, counter in self._counters.items()]
            for (name, labels), value in [*counters, *self._gauges.items()]:
                out.setdefault(name, []).append({"labels": dict(labels), "value": value})
            for (name, labels), h in self._histograms.items():
                out.setdefault(name, []).append(
                    {"labels": dict(labels), "count": h.count, "sum": h.sum}
                )
        return out

    def remove_gauges(
        self,
        name: str,
        keep: Callable[[dict[str, str]], bool] = lambda labels: False,
        **labels: Any,
    ) -> int:
        """Forget the gauges of ``name`` whose labels include ``labels`` and that ``keep`` does
        not keep (the lag of queues a consumer no longer owns); how many were."""
        wanted = {k: str(v) for k, v in labels.items()}
        with self._lock:
            gone = [
                key for key in self._gauges
                if key[0] == name and wanted.items() <= dict(key[1]).items()
                and not keep(dict(key[1]))
            ]  # fmt: skip
            for key in gone:
                del self._gauges[key]
        return len(gone)

    def reset(self) -> None:
        with self._lock:
            self._counters.clear()
            self._gauges.clear()
            self._histograms.clear()
            self._series.clear()
            self._dirty.clear()
            for cache in list(self.caches):  # (their series are no longer the registry's)
                cache.clear()

    def prometheus_collector(self) -> Any:
        """A ``prometheus_client`` collector reading this registry at scrape time
        (:class:`~rocketmq_actors.extras.MissingExtra` without the ``prometheus`` extra)."""
        require("prometheus_client", purpose="Prometheus export")
        from prometheus_client.core import (
            CounterMetricFamily,
            GaugeMetricFamily,
            HistogramMetricFamily,
        )
        from prometheus_client.registry import Collector

        metrics = self

        class _Collector(Collector):
            def collect(self) -> Iterator[Any]:
                with metrics._lock:
                    metrics._fold_all()
                    counters = {k: c.value for k, c in metrics._counters.items()}
                    gauges = dict(metrics._gauges)
                    histograms = {
                        k: (h.bounds, list(h.counts), h.sum) for k, h in metrics._histograms.items()
                    }
                families: dict[str, Any] = {}
                for (name, labels), value in counters.items():
                    base = name.removesuffix("_total")
                    family = families.get(name) or families.setdefault(
                        name, CounterMetricFamily(base, _HELP.get(name, name),
                                                  labels=[k for k, _ in labels]))  # fmt: skip
                    family.add_metric([v for _, v in labels], value)
                for (name, labels), value in gauges.items():
                    family = families.get(name) or families.setdefault(
                        name, GaugeMetricFamily(name, _HELP.get(name, name),
                                                labels=[k for k, _ in labels]))  # fmt: skip
                    family.add_metric([v for _, v in labels], value)
                for (name, labels), (bounds, counts, total) in histograms.items():
                    family = families.get(name) or families.setdefault(
                        name, HistogramMetricFamily(name, _HELP.get(name, name),
                                                    labels=[k for k, _ in labels]))  # fmt: skip
                    cumulative, buckets = 0, []
                    for bound, n in zip([*map(str, bounds), "+Inf"], counts, strict=True):
                        cumulative += n
                        buckets.append((bound, cumulative))
                    family.add_metric([v for _, v in labels], buckets, total)
                yield from families.values()

        return _Collector()


#: The registry the client writes to.
METRICS = Metrics()
