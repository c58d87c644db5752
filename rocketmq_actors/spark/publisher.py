"""Driver-side publishing: small jobs send from the driver.

    from rocketmq_actors.spark import publish_dataframe
    report = publish_dataframe(df, topic="orders", namesrv="127.0.0.1:9876")
    print(report.sent, report.failed)

Rows are streamed with ``toLocalIterator`` (one partition at a time on the driver, never
``collect``) and sent with a bounded number in flight, so memory stays bounded by a partition
plus the in-flight window. For large DataFrames use the ``rocketmq`` data source instead: it
publishes from the executors.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyspark.sql import DataFrame

from rocketmq_actors.blocking import BlockingProducer, SendSummary
from rocketmq_actors.logs import get_logger

from .columns import plan_rows
from .options import SinkOptions
from .probe import probe_namesrv
from .sink import publish_rows

__all__ = ["publish_dataframe"]

log = get_logger("rocketmq_actors.spark")


def _log_progress(summary: SendSummary) -> None:
    log.info("spark.publish_progress", sent=summary.sent, failed=summary.failed)


def publish_dataframe(
    df: DataFrame,
    topic: str | None = None,
    *,
    namesrv: str,
    group: str = "rocketmq_actors_spark",
    prefetch_partitions: bool = False,
    progress: Callable[[SendSummary], None] | None = _log_progress,
    **options: Any,
) -> SendSummary:
    """Publish every row of ``df`` from the driver (columns as in
    :mod:`rocketmq_actors.spark.columns`; ``options`` as the data source's, e.g.
    ``chunkSize="256"``). Returns counts and the first failures; nothing is raised for a
    failed send. The schema and options are checked, and the NameServer probed, before any
    Spark job runs."""
    settings = SinkOptions.parse(
        {"namesrv": namesrv, "group": group, **({"topic": topic} if topic else {}),
         **{k: str(v) for k, v in options.items()}}
    )  # fmt: skip
    plan = plan_rows(df.schema, settings.topic, ignore_extra=settings.ignore_extra_columns)
    probe_namesrv(settings.namesrv, ssl_context=settings.ssl_context())
    with BlockingProducer(**settings.producer_options()) as producer:
        summary = publish_rows(
            df.toLocalIterator(prefetchPartitions=prefetch_partitions), plan, producer,
            chunk_size=settings.chunk_size, max_chunks=settings.max_chunks,
            batch_size=settings.batch_size, progress=progress,
        )  # fmt: skip
    log.info("spark.published", sent=summary.sent, failed=summary.failed,
             seconds=round(summary.seconds, 2))  # fmt: skip
    return summary
