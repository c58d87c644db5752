"""Reading with the ``rocketmq`` source: batch (``spark.read``) and streaming
(``spark.readStream``).

Both plan on the driver, per queue, with :class:`~.offsets.OffsetPlanner`, and read on the
executors, one pull consumer's group (:class:`~rocketmq_actors.consumer.pull.group.PullGroup`)
per Spark partition pulling its offset range. A streaming query's offsets are Spark's (the
checkpoint's offset log): a query restarted from its checkpoint reads each offset once more
only if its batch was not committed, so with an idempotent sink (the file sink) the output has
every message exactly once.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Iterator, Sequence
from concurrent.futures import Future
from typing import Any, TypeVar

import anyio
from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.consumer.core.brokercalls import max_offset
from rocketmq_actors.errors import InternalError
from rocketmq_actors.logs import get_logger
from rocketmq_actors.protocol.bodies import MessageQueue

from .offsets import (
    UNCAPPED,
    OffsetPlanner,
    Offsets,
    PackedRanges,
    QueueRange,
    flat,
    nest,
    pack,
    ranges,
    split,
)
from .pulling import read_ranges
from .source_options import SourceOptions

__all__ = ["RocketMQReader", "RocketMQStreamReader"]

log = get_logger("rocketmq_actors.spark")
T = TypeVar("T")


SHUTDOWN_TIMEOUT = (
    15.0  # the client's own shutdown timeout (ClientInstance's default 10 s) and some
)


class PlannerLoop:
    """A client kept open on the driver between planning calls (a streaming query plans every
    trigger), on an event loop in a daemon thread: an interpreter that exits without
    :meth:`close` (Spark's planner process being stopped) is not held up by it."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True,
                                        name="rocketmq-spark-planner")  # fmt: skip
        self._thread.start()
        self._planner: OffsetPlanner | None = None
        self._stop = asyncio.Event()
        self._ready: Future[None] = Future()
        self._main = asyncio.run_coroutine_threadsafe(self._serve(), self._loop)
        try:
            self._ready.result()
        except BaseException:
            self._halt()
            raise

    async def _serve(self) -> None:
        try:
            instance = ClientInstance(self.options.namesrv, **self.options.client_options())
            async with instance:
                self._planner = OffsetPlanner(instance, self.options)
                self._ready.set_result(None)
                await self._stop.wait()
        except BaseException as exc:
            if not self._ready.done():
                self._ready.set_exception(exc)
            raise

    def call(self, plan: Callable[[OffsetPlanner], Awaitable[T]]) -> T:
        assert self._planner is not None
        planner = self._planner

        async def run() -> T:
            return await plan(planner)

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result()

    def close(self) -> None:
        if self._loop.is_closed():
            return
        self._loop.call_soon_threadsafe(self._stop.set)
        try:
            self._main.result(timeout=SHUTDOWN_TIMEOUT)
        finally:
            self._halt()

    def _halt(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=SHUTDOWN_TIMEOUT)
        if not self._thread.is_alive():
            self._loop.close()


def plan_once(options: SourceOptions, plan: Callable[[OffsetPlanner], Awaitable[T]]) -> T:
    """One planning call with a client of its own (batch reads plan once)."""

    async def run() -> T:
        async with ClientInstance(options.namesrv, **options.client_options()) as instance:
            return await plan(OffsetPlanner(instance, options))

    return anyio.run(run)


def partitions_of(
    options: SourceOptions, planned: list[QueueRange], cores: int | None
) -> list[InputPartition]:
    """The Spark partitions of a plan's ranges: split to ``minPartitions`` when it is given
    (as Kafka's), else small ranges packed together (``minOffsetsPerPartition``, for
    ``cores``: the session's default parallelism, None when not known)."""
    if options.min_partitions is not None:
        return list(split(planned, options.min_partitions))
    return list(pack(planned, options.min_offsets_per_partition, cores))


def read_partition(options: SourceOptions, partition: InputPartition) -> Iterator[Any]:
    """The rows of one planned partition. A plan with no ranges at all (an empty topic,
    ``startingOffsets`` latest) is read by Spark as one placeholder partition: no rows."""
    if isinstance(partition, QueueRange):
        return read_ranges(options, (partition,))
    if isinstance(partition, PackedRanges):
        return read_ranges(options, partition.ranges)
    if type(partition) is InputPartition and partition.value is None:
        return iter(())
    raise InternalError(f"the rocketmq source did not plan partition {partition!r}")


class RocketMQReader(DataSourceReader):
    """Batch reads: one Spark partition per queue (small ones packed together, or more with
    ``minPartitions``), from
    ``startingOffsets`` to ``endingOffsets`` as they are when the read is planned."""

    def __init__(self, options: dict[str, str], cores: int | None = None) -> None:
        self.settings = SourceOptions.parse(options, streaming=False)
        self.cores = cores  # the session's default parallelism (packing), None: not known

    def partitions(self) -> Sequence[InputPartition]:
        async def plan(planner: OffsetPlanner) -> list[InputPartition]:
            queues = await planner.queues()
            start = await planner.check_loss(await planner.starting(queues))
            planned = ranges(start, await planner.ending(queues))
            return partitions_of(self.settings, planned, self.cores)

        return plan_once(self.settings, plan)

    def read(self, partition: InputPartition) -> Iterator[Any]:
        return read_partition(self.settings, partition)


class RocketMQStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Streaming reads: offsets per queue in the checkpoint, ``maxOffsetsPerTrigger`` as
    Spark's read limit, ``Trigger.AvailableNow``, new queues, brokers and pattern-matched topics
    picked up at every trigger (from their first stored offset)."""

    def __init__(self, options: dict[str, str], cores: int | None = None) -> None:
        self.settings = SourceOptions.parse(options, streaming=True)
        self.cores = cores  # the session's default parallelism (packing), None: not known
        self._loop: PlannerLoop | None = None  # driver only, opened on first use
        self._target: dict[MessageQueue, int] | None = None  # Trigger.AvailableNow's end

    def __getstate__(self) -> dict[str, Any]:  # executors get the options, not the client
        return {"settings": self.settings, "cores": self.cores, "_loop": None, "_target": None}

    def _plan(self, plan: Callable[[OffsetPlanner], Awaitable[T]]) -> T:
        if self._loop is None:
            self._loop = PlannerLoop(self.settings)
        return self._loop.call(plan)

    def initialOffset(self) -> Offsets:
        async def plan(planner: OffsetPlanner) -> Offsets:
            return nest(await planner.starting(await planner.queues()))

        return self._plan(plan)

    def getDefaultReadLimit(self) -> ReadLimit:
        limit = self.settings.max_offsets_per_trigger
        return ReadAllAvailable() if limit is None else ReadMaxRows(limit)

    def prepareForTriggerAvailableNow(self) -> None:
        async def plan(planner: OffsetPlanner) -> dict[MessageQueue, int]:
            queues = await planner.queues()
            found = await planner.answered(queues, max_offset)
            # a queue whose broker did not answer now is read as far as it stands when it does
            # (capped at nothing: never left out of the run)
            return {q: found.get(q, UNCAPPED) for q in queues}

        self._target = self._plan(plan)
        log.info("spark.available_now", queues=len(self._target),
                 offsets=sum(self._target.values()))  # fmt: skip

    def latestOffset(self, start: Offsets | None = None, limit: ReadLimit | None = None) -> Offsets:
        begin, target = flat(start or {}), self._target
        rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None

        async def plan(planner: OffsetPlanner) -> dict[MessageQueue, int]:
            return await planner.next_end(begin, target, rows)

        return nest(self._plan(plan))

    def reportLatestOffset(self) -> Offsets | None:
        async def plan(planner: OffsetPlanner) -> dict[MessageQueue, int]:
            return await planner.reported_latest()

        return nest(self._plan(plan))

    def partitions(self, start: Offsets, end: Offsets) -> Sequence[InputPartition]:
        begin, until = flat(start), flat(end)

        async def plan(planner: OffsetPlanner) -> list[InputPartition]:
            new = [q for q in until if q not in begin]  # found by latestOffset: from the first
            first = {**begin, **await planner.first_of_new(new)}
            moving = {q: first[q] for q in until if until[q] > first[q]}  # gone queues: not asked
            checked = await planner.check_loss(moving)
            return partitions_of(self.settings, ranges(checked, until), self.cores)

        if begin == until:
            return []
        return self._plan(plan)

    def read(self, partition: InputPartition) -> Iterator[Any]:
        return read_partition(self.settings, partition)

    def commit(self, end: Offsets) -> None:
        # offsets live in the checkpoint; nothing is committed to the broker (as Kafka's source)
        log.debug("spark.batch_committed", queues=sum(len(q) for q in end.values()))

    def stop(self) -> None:
        if self._loop is not None:
            self._loop.close()
            self._loop = None
