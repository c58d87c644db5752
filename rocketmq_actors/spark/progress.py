"""How far a streaming query is behind, from its progress.

PySpark's Python data source API gives a source no say in its progress report beyond its
offsets: the source's ``description`` is Spark's class name and its ``metrics`` stay empty.
What the report does hold is each trigger's ``endOffset`` and, as the ``rocketmq`` source
reports it, the ``latestOffset`` the broker had when the trigger was planned: their difference,
queue by queue, is the backlog Kafka's source shows as ``offsetsBehindLatest``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["backlog"]

_QUEUE = re.compile(r".+:\d+")  # broker-a:3


def _offsets(value: Any) -> dict[str, dict[str, int]] | None:
    """A source offset of ours (``{"topic": {"broker-a:0": 42}}``, as JSON text or parsed),
    or None for another source's."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    if not isinstance(value, Mapping):
        return None
    for queues in value.values():
        if not isinstance(queues, Mapping) or not all(
            isinstance(n, int) and not isinstance(n, bool) and _QUEUE.fullmatch(str(k))
            for k, n in queues.items()
        ):
            return None  # (Kafka's are {"topic": {"0": 42}}: partitions without a broker)
    return {str(t): {str(k): int(n) for k, n in q.items()} for t, q in value.items()}


def backlog(progress: Mapping[str, Any]) -> dict[str, int]:
    """Messages stored past where a streaming query's batch ended, per topic of its
    ``rocketmq`` sources: ``latestOffset`` minus ``endOffset``, queue by queue, as the source
    saw the broker when it planned that trigger. ``progress`` is ``query.lastProgress``, an
    item of ``query.recentProgress``, or a ``StreamingQueryListener`` event's ``progress``.
    Sources of other kinds are left out; an empty dict when there is none of ours."""
    behind: dict[str, int] = {}
    for source in progress.get("sources") or ():
        end, latest = _offsets(source.get("endOffset")), _offsets(source.get("latestOffset"))
        if end is None or latest is None:
            continue
        for topic, queues in latest.items():
            done = end.get(topic, {})
            behind[topic] = behind.get(topic, 0) + sum(
                max(0, n - done.get(key, 0)) for key, n in queues.items()
            )
    return behind
