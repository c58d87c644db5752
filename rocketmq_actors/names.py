"""Names on the wire: topics, groups and namespaces, checked as the Java client's
``Validators`` and ``NamespaceUtil`` check them. Shared by producers, consumers, the CLI and
Spark (no consumer imports the producer for them)."""

from __future__ import annotations

import re

from rocketmq_actors.errors import ConfigError, InvalidMessage

__all__ = [
    "MAX_GROUP_LENGTH",
    "MAX_TOPIC_LENGTH",
    "NOT_ALLOWED_SEND_TOPICS",
    "unwrap",
    "validate_group",
    "validate_topic",
    "wrap",
]

_NAME = re.compile(r"^[%|a-zA-Z0-9_-]+$")
# Java's TopicValidator.NOT_ALLOWED_SEND_TOPIC_SET: the broker's own topics, which no client
# sends to (Java refuses them in Validators.checkMessage). Other system topics, such as
# RMQ_SYS_TRACE_TOPIC (message trace) or TBW102, are sent to and read by Java clients and tools.
NOT_ALLOWED_SEND_TOPICS = frozenset(
    {
        "SCHEDULE_TOPIC_XXXX",
        "RMQ_SYS_TRANS_HALF_TOPIC",
        "RMQ_SYS_TRANS_OP_HALF_TOPIC",
        "TRANS_CHECK_MAX_TIME_TOPIC",
        "SELF_TEST_TOPIC",
        "OFFSET_MOVED_EVENT",
        "RMQ_SYS_TOPIC_CONFIG_SYNC",
        "RMQ_SYS_CONSUMER_OFFSET_SYNC",
        "RMQ_SYS_DELAY_OFFSET_SYNC",
        "RMQ_SYS_SUBSCRIPTION_GROUP_SYNC",
        "RMQ_SYS_MESSAGE_MODE_SYNC",
        "RMQ_SYS_TIMER_METRICS_SYNC",
    }
)
# Java's TopicValidator.SYSTEM_TOPIC_SET (namespaces leave these alone)
_SYSTEM_TOPICS = NOT_ALLOWED_SEND_TOPICS | {
    "TBW102",
    "BenchmarkTest",
    "RMQ_SYS_TRACE_TOPIC",
    "CHECKPOINT_TOPIC",
}
MAX_TOPIC_LENGTH = 127
MAX_RETRY_OR_DLQ_TOPIC_LENGTH = 255  # %RETRY%<group> and %DLQ%<group> may be longer
_RETRY_OR_DLQ = ("%RETRY%", "%DLQ%")
MAX_GROUP_LENGTH = 120

_valid_topics: set[str] = set()  # validated once each: producers send to few topics


def validate_topic(topic: str, *, error: type[Exception] = InvalidMessage) -> None:
    """A topic as Java's ``Validators`` checks it: 1-127 characters of ``[%|a-zA-Z0-9_-]``
    (255 for retry and DLQ topics). ``error`` is raised otherwise: :class:`InvalidMessage`
    for a message's topic, which also must not be one of :data:`NOT_ALLOWED_SEND_TOPICS`;
    :class:`ConfigError` for a subscription's (any topic may be read)."""
    if topic.__class__ is str and topic in _valid_topics:
        return
    try:
        _check_topic(topic)
        if error is InvalidMessage and topic in NOT_ALLOWED_SEND_TOPICS:
            raise InvalidMessage(f"sending to {topic!r} is forbidden: it is the broker's own")
    except InvalidMessage as exc:
        if error is InvalidMessage:
            raise
        raise error(str(exc)) from None
    if error is InvalidMessage and len(_valid_topics) < 10_000:
        _valid_topics.add(topic)


def _check_topic(topic: object) -> None:
    if not isinstance(topic, str):
        raise InvalidMessage(f"the topic must be a str, not {type(topic).__name__}")
    if not topic or not topic.strip():
        raise InvalidMessage("the topic is empty")
    limit = (MAX_RETRY_OR_DLQ_TOPIC_LENGTH if topic.startswith(_RETRY_OR_DLQ)
             else MAX_TOPIC_LENGTH)  # fmt: skip
    if len(topic) > limit:
        raise InvalidMessage(f"topic {topic[:20]!r}... is longer than {limit} characters")
    if not _NAME.match(topic):
        raise InvalidMessage(f"topic {topic!r} has characters outside [%|a-zA-Z0-9_-]")


def validate_group(group: str) -> None:
    """A producer or consumer group: 1-120 characters of ``[%|a-zA-Z0-9_-]``."""
    if (
        not isinstance(group, str)
        or not group
        or len(group) > MAX_GROUP_LENGTH
        or not (_NAME.match(group))
    ):
        raise ConfigError(
            f"group {group!r} must be 1-{MAX_GROUP_LENGTH} characters of [%|a-zA-Z0-9_-]"
        )


def _is_system(name: str) -> bool:
    """Java's NamespaceUtil.isSystemResource: system topics and system consumer groups."""
    return name in _SYSTEM_TOPICS or name.startswith(("rmq_sys_", "CID_RMQ_SYS_"))


def _split_prefix(name: str) -> tuple[str, str]:
    for prefix in _RETRY_OR_DLQ:
        if name.startswith(prefix):
            return prefix, name[len(prefix) :]
    return "", name


def wrap(namespace: str | None, name: str) -> str:
    """The resource on the wire, as Java's ``NamespaceUtil.wrapNamespace``: ``ns%name``;
    ``%RETRY%ns%group`` and ``%DLQ%ns%group`` for retry and dead-letter topics; system
    topics and groups, and names already wrapped, as they are."""
    if not namespace or not name or _is_system(name):
        return name
    prefix, bare = _split_prefix(name)
    if bare.startswith(f"{namespace}%"):
        return name
    return f"{prefix}{namespace}%{bare}"


def unwrap(namespace: str | None, name: str) -> str:
    """The resource as the application names it (Java's ``NamespaceUtil.withoutNamespace``
    with the consumer's namespace): ``ns%orders`` -> ``orders``, ``%RETRY%ns%g`` ->
    ``%RETRY%g``; anything not in ``namespace`` as it is."""
    if not namespace or not name or _is_system(name):
        return name
    prefix, bare = _split_prefix(name)
    if bare.startswith(f"{namespace}%"):
        return prefix + bare[len(namespace) + 1 :]
    return name
