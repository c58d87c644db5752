"""Publishing rows: the loop shared by the driver-side publisher and the executor-side sink."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from rocketmq_actors.blocking import BlockingProducer, SendSummary
from rocketmq_actors.logs import get_logger
from rocketmq_actors.producer import Message

from .columns import QueueById, RowPlan

__all__ = ["publish_rows"]

log = get_logger("rocketmq_actors.spark")


def publish_rows(
    rows: Iterable[Sequence[Any]],
    plan: RowPlan,
    producer: BlockingProducer,
    *,
    chunk_size: int,
    max_chunks: int,
    batch_size: int,
    progress: Callable[[SendSummary], None] | None = None,
) -> SendSummary:
    """Turn rows into messages and send them; rows that are not messages count as failures."""
    refused = SendSummary()

    def messages() -> Iterator[tuple[Message, str | QueueById | None]]:
        for number, row in enumerate(rows):
            try:
                yield plan.to_message(row)
            except ValueError as exc:  # InvalidMessage: a null body, two delays, ...
                refused.fail(f"row {number}", exc)

    summary = producer.send_many(
        messages(),
        chunk_size=chunk_size,
        max_chunks=max_chunks,
        batch_size=batch_size,
        progress=progress,
    )
    summary.merge(refused)
    return summary
