"""Options of the ``rocketmq`` source (batch ``read`` and ``readStream``), named after Spark's
Kafka source and checked on the driver when the read is planned: an unknown or misspelt option
is refused, as the writer refuses one. docs/spark.md has the table; in short:

- ``namesrv`` (required); exactly one of ``topic``, ``topics`` (comma-separated),
  ``topicPattern`` (a regular expression matched against the whole name; system, retry and
  dead-letter topics excluded; new matches picked up between micro-batches) and ``assign``
  (JSON, ``{"topic": ["broker-a:0", ...]}``: those queues only). ``includeHeaders`` is taken
  for Kafka's sake: the ``properties`` column is always there.
- ``startingOffsets``: ``earliest``, ``latest`` or JSON per queue,
  ``{"orders": {"broker-a:0": 42}}`` (-2 earliest, -1 latest; queues it leaves out start at the
  default: ``latest`` for a stream, ``earliest`` for a batch); or ``startingTimestamp`` (epoch
  ms, every queue) or ``startingOffsetsByTimestamp`` (JSON per queue of epoch ms): at most one.
- ``endingOffsets`` (batch only): ``latest`` or JSON per queue (-1 latest); or
  ``endingTimestamp`` (epoch ms, every queue) or ``endingOffsetsByTimestamp`` (JSON per queue
  of epoch ms): a queue ends before its first message stored at or after the time.
- ``failOnDataLoss`` (``true``): offsets deleted by retention before they were read fail the
  query, or (``false``) are logged as ``spark.data_lost`` and skipped.
- ``maxOffsetsPerTrigger`` (stream only), ``minPartitions``, ``minOffsetsPerPartition``
  (queue ranges smaller than this share a partition; 0: one partition per queue, as Kafka),
  ``tags`` or ``sql`` (a broker-side filter), ``group``, ``namespace``, ``pullBatchSize``,
  ``pullRetryTimeoutMs`` (how long a task's pulls wait for a broker that does not answer),
  and the writer's ``tls``,
  ``tlsInsecure``, ``accessKey``, ``secretKey`` and ``logLevel``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Literal

import attrs

from rocketmq_actors.cluster.namesrv import parse_namesrv
from rocketmq_actors.names import validate_group, validate_topic
from rocketmq_actors.protocol.acl import AclCredentials

from .options import OptionError, _bool, _level, _number, tls_context

__all__ = [
    "EARLIEST",
    "LATEST",
    "MIN_OFFSETS_PER_PARTITION",
    "QueueSpec",
    "SourceOptions",
    "queue_key",
]

#: the default of ``minOffsetsPerPartition``: a PySpark Python data source task costs tens of
#: milliseconds before its first row (benchmarks/spark.py, ``spark_task_overhead``), a few
#: percent of reading this many messages on one core (the same benchmark reads a backlog with
#: this value and with 100000, alternated: ``spark_batch_read_by_min_offsets_per_partition``)
MIN_OFFSETS_PER_PARTITION = 300_000

#: the default of ``pullRetryTimeoutMs``: how long an executor's pulls of a broker that does not
#: answer are retried before its task fails; as long as Spark's Kafka source waits for a poll
#: (``kafkaConsumer.pollTimeoutMs``, ``spark.network.timeout``), time for a broker to restart
PULL_RETRY_TIMEOUT_MS = 120_000

EARLIEST = -2  # as Kafka's JSON offsets
LATEST = -1

_KNOWN = {
    "namesrv", "topic", "topics", "topicpattern", "assign", "includeheaders",
    "startingoffsets", "endingoffsets",
    "endingtimestamp", "endingoffsetsbytimestamp",
    "startingtimestamp", "startingoffsetsbytimestamp", "failondataloss",
    "maxoffsetspertrigger", "minpartitions", "minoffsetsperpartition", "tags", "sql", "group",
    "namespace", "pullbatchsize", "pullretrytimeoutms",
    "tls", "tlsinsecure", "accesskey", "secretkey", "loglevel",
    "path", "checkpointlocation", "queryname",  # Spark's own, passed along to every source
}  # fmt: skip
_STREAM_ONLY = {"maxoffsetspertrigger"}
_BATCH_ONLY = {"endingoffsets", "endingtimestamp", "endingoffsetsbytimestamp"}

#: ``{"topic": {"broker:queue": value}}``: offsets (or timestamps) of named queues
QueueSpec = dict[str, dict[str, int]]


def queue_key(broker_name: str, queue_id: int) -> str:
    """How a queue is named in offsets JSON and in the checkpoint: ``broker-a:3``."""
    return f"{broker_name}:{queue_id}"


def _json_object(name: str, raw: str, like: str) -> dict[str, Any]:
    """Option ``name``'s JSON object, not empty (an :class:`OptionError` saying it should be
    ``like`` otherwise)."""
    try:
        parsed = json.loads(raw)
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict) or not parsed:
        raise OptionError(f"option {name!r} must be {like}, not {raw!r}")
    return parsed


def _queue_name(name: str, key: object) -> str:
    """``broker-name:queue-id`` (a queue of an option's JSON), as :func:`queue_key` writes it."""
    broker, _, queue = str(key).rpartition(":")
    if not isinstance(key, str) or not broker or not queue.isdigit():
        raise OptionError(f"option {name!r}: queue {key!r} is not broker-name:queue-id")
    return queue_key(broker, int(queue))


def _spec(name: str, raw: str, *, allowed: tuple[int, ...] = (), minimum: int = 0) -> QueueSpec:
    """A JSON ``{"topic": {"broker:queue": int}}``; values >= ``minimum`` or in ``allowed``."""
    parsed = _json_object(name, raw, 'earliest, latest or JSON like {"topic": {"broker-a:0": 42}}')
    spec: QueueSpec = {}
    for topic, queues in parsed.items():
        if not isinstance(queues, dict):
            raise OptionError(f"option {name!r}: the value for {topic!r} must be an object")
        spec[topic] = {}
        for key, value in queues.items():
            queue = _queue_name(name, key)
            ok = isinstance(value, int) and not isinstance(value, bool)
            if not ok or (value < minimum and value not in allowed):
                raise OptionError(f"option {name!r}: {topic}/{key} has the value {value!r}")
            spec[topic][queue] = value
    return spec


@attrs.frozen
class Bound:
    """Where queues start or (batch reads) end: a mode for every queue (``earliest``,
    ``latest``), per-queue offsets, or the first offset stored at or after a time (every
    queue's, or per queue)."""

    kind: Literal["earliest", "latest", "offsets", "timestamp", "timestamps"] = "latest"
    offsets: QueueSpec = attrs.field(factory=dict)
    timestamp: int = 0


def _bound(lowered: Mapping[str, str], side: str, default: str, modes: tuple[str, ...]) -> Bound:
    """``side`` (``starting`` or ``ending``): its ``Offsets``, ``Timestamp`` or
    ``OffsetsByTimestamp`` option (at most one), else ``default``; ``modes`` are the words
    ``Offsets`` takes besides JSON (whose -1 is latest, and -2 earliest if ``modes`` has it)."""
    offsets, stamp, stamps = f"{side}Offsets", f"{side}Timestamp", f"{side}OffsetsByTimestamp"
    if sum(name.lower() in lowered for name in (offsets, stamp, stamps)) > 1:
        raise OptionError(f"give at most one of {offsets}, {stamp} and {stamps}")
    if stamp.lower() in lowered:
        return Bound("timestamp", timestamp=_number(lowered, stamp, 0, minimum=0))
    if stamps.lower() in lowered:
        return Bound("timestamps", _spec(stamps, lowered[stamps.lower()]))
    raw = lowered.get(offsets.lower(), default).strip()
    if raw.lower() in modes:
        return Bound(raw.lower())  # type: ignore[arg-type]
    allowed = (LATEST, EARLIEST) if "earliest" in modes else (LATEST,)
    return Bound("offsets", _spec(offsets, raw, allowed=allowed))


def _assign(raw: str) -> dict[str, frozenset[str]]:
    """``assign``: ``{"topic": ["broker-a:0", "broker-b:1"]}``, the queues read (Kafka's
    ``{"topic": [0, 1]}``: a queue is named by its broker too)."""
    parsed = _json_object("assign", raw, 'JSON like {"topic": ["broker-a:0"]}')
    assigned: dict[str, frozenset[str]] = {}
    for topic, queues in parsed.items():
        validate_topic(topic, error=OptionError)
        if not isinstance(queues, list) or not queues:
            raise OptionError(f"option 'assign': {topic!r} must name a list of queues")
        assigned[topic] = frozenset(_queue_name("assign", key) for key in queues)
    return assigned


def _topics(lowered: Mapping[str, str]) -> tuple[tuple[str, ...], re.Pattern[str] | None]:
    given = [n for n in ("topic", "topics", "topicpattern", "assign") if lowered.get(n)]
    if len(given) != 1:
        raise OptionError(
            "give exactly one of the options 'topic', 'topics', 'topicPattern' and 'assign'"
        )
    if given[0] == "assign":
        return (), None  # (the topics are assign's: _parse)
    if given[0] == "topicpattern":
        try:
            return (), re.compile(lowered["topicpattern"])
        except re.error as exc:
            raise OptionError(f"option 'topicPattern' is not a regular expression: {exc}") from None
    topics = tuple(t.strip() for t in lowered[given[0]].split(",") if t.strip())
    if not topics:
        raise OptionError(f"option {given[0]!r} names no topic")
    for topic in topics:
        validate_topic(topic, error=OptionError)
    return topics, None


@attrs.frozen
class SourceOptions:
    streaming: bool
    namesrv: str
    topics: tuple[str, ...]
    pattern: re.Pattern[str] | None
    assigned: dict[str, frozenset[str]] | None  # ``assign``: topic -> its queues read
    start: Bound
    end: Bound
    fail_on_data_loss: bool
    max_offsets_per_trigger: int | None
    min_partitions: int | None
    min_offsets_per_partition: int  # 0: no packing
    expression: str
    expression_type: str  # TAG or SQL92
    group: str
    namespace: str | None
    pull_batch_size: int
    pull_retry_timeout: float  # seconds
    tls: bool
    tls_insecure: bool
    log_level: str
    access_key: str | None
    secret_key: str | None = attrs.field(repr=False)

    @classmethod
    def parse(cls, options: Mapping[str, str], *, streaming: bool) -> SourceOptions:
        lowered = {str(k).lower(): str(v) for k, v in options.items()}
        unknown = sorted(set(lowered) - _KNOWN)
        if unknown:
            raise OptionError(f"unknown option(s) {unknown} for the rocketmq source")
        wrong = sorted(set(lowered) & (_BATCH_ONLY if streaming else _STREAM_ONLY))
        if wrong:
            kind = "streaming" if streaming else "batch"
            raise OptionError(f"option(s) {wrong} do not apply to a {kind} read")
        try:
            return cls._parse(lowered, streaming)
        except OptionError:
            raise
        except ValueError as exc:  # a ConfigError from the name checks
            raise OptionError(str(exc)) from exc

    @classmethod
    def _parse(cls, lowered: dict[str, str], streaming: bool) -> SourceOptions:
        namesrv = lowered.get("namesrv")
        if not namesrv:
            raise OptionError("option 'namesrv' is required (host:port[;host:port...])")
        parse_namesrv(namesrv)
        topics, pattern = _topics(lowered)
        end = _bound(lowered, "ending", "latest", ("latest",))
        if lowered.get("tags") and lowered.get("sql"):
            raise OptionError("give at most one of the options 'tags' and 'sql'")
        access_key = lowered.get("accesskey") or None
        secret_key = lowered.get("secretkey") or None
        if (access_key is None) != (secret_key is None):
            raise OptionError("ACL credentials need both options 'accessKey' and 'secretKey'")
        group = lowered.get("group") or "rocketmq_actors_spark_reader"
        validate_group(group)
        limit = lowered.get("maxoffsetspertrigger")
        parts = lowered.get("minpartitions")
        _bool(lowered, "includeheaders", True)  # (checked: the properties column is always there)
        assigned = _assign(lowered["assign"]) if lowered.get("assign") else None
        return cls(
            streaming=streaming, namesrv=namesrv, pattern=pattern, assigned=assigned,
            topics=tuple(assigned) if assigned is not None else topics,
            start=_bound(lowered, "starting", "latest" if streaming else "earliest",
                         ("earliest", "latest")), end=end,
            fail_on_data_loss=_bool(lowered, "failondataloss", True),
            max_offsets_per_trigger=None if limit is None else _number(
                lowered, "maxOffsetsPerTrigger", 1, minimum=1),
            min_partitions=None if parts is None else _number(
                lowered, "minPartitions", 1, minimum=1),
            min_offsets_per_partition=_number(
                lowered, "minOffsetsPerPartition", MIN_OFFSETS_PER_PARTITION, minimum=0),
            expression=lowered.get("sql") or lowered.get("tags") or "*",
            expression_type="SQL92" if lowered.get("sql") else "TAG",
            group=group, namespace=lowered.get("namespace") or None,
            pull_batch_size=_number(lowered, "pullBatchSize", 64, minimum=1),
            pull_retry_timeout=_number(lowered, "pullRetryTimeoutMs", PULL_RETRY_TIMEOUT_MS,
                                       minimum=0) / 1000,
            tls=_bool(lowered, "tls", False), tls_insecure=_bool(lowered, "tlsinsecure", False),
            log_level=_level(lowered.get("loglevel", "WARNING")),
            access_key=access_key, secret_key=secret_key,
        )  # fmt: skip

    @property
    def unfiltered(self) -> bool:
        """No ``tags`` / ``sql``: every offset of a range is a row (the broker skips none)."""
        return self.expression == "*" and self.expression_type == "TAG"

    def client_options(self) -> dict[str, Any]:
        """Keyword arguments for a ClientInstance / ClientOptions of this source."""
        return {
            "ssl_context": tls_context(self.tls, self.tls_insecure),
            "credentials": (
                AclCredentials(self.access_key, self.secret_key)
                if self.access_key and self.secret_key
                else None
            ),
        }
