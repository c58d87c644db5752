"""Names on the wire: topics, groups and namespaces, checked as the Java client's
``Validators`` and ``NamespaceUtil`` check them. Shared by producers, consumers, the CLI and
Spark (no consumer imports the producer for them)."""

from __future__ import annotations

import re

from rocketmq_actors.errors import ConfigError, InvalidMessage

__all__ = [
    "MAX_GROUP_LENGTH",
    "MAX_TOPIC_LENGTH",
    "SYSTEM_TOPICS",
    "validate_group",
    "validate_topic",
    "wrap",
]

_NAME = re.compile(r"^[%|a-zA-Z0-9_-]+$")
SYSTEM_TOPICS = frozenset(
    {
        "TBW102",
        "SCHEDULE_TOPIC_XXXX",
        "BenchmarkTest",
        "RMQ_SYS_TRANS_HALF_TOPIC",
        "RMQ_SYS_TRACE_TOPIC",
        "RMQ_SYS_TRANS_OP_HALF_TOPIC",
        "TRANS_CHECK_MAX_TIME_TOPIC",
        "SELF_TEST_TOPIC",
        "OFFSET_MOVED_EVENT",
    }
)
MAX_TOPIC_LENGTH = 127
MAX_GROUP_LENGTH = 120

_valid_topics: set[str] = set()  # validated once each: producers send to few topics


def validate_topic(topic: str, *, error: type[Exception] = InvalidMessage) -> None:
    """A topic a client may use: 1-127 characters of ``[%|a-zA-Z0-9_-]``, not a system topic.
    ``error`` is raised otherwise (:class:`InvalidMessage` for a message's topic,
    :class:`ConfigError` for a subscription's)."""
    if topic in _valid_topics:
        return
    try:
        _check_topic(topic)
    except InvalidMessage as exc:
        if error is InvalidMessage:
            raise
        raise error(str(exc)) from None
    if len(_valid_topics) < 10_000:
        _valid_topics.add(topic)


def _check_topic(topic: object) -> None:
    if not isinstance(topic, str):
        raise InvalidMessage(f"the topic must be a str, not {type(topic).__name__}")
    if not topic or not topic.strip():
        raise InvalidMessage("the topic is empty")
    if len(topic) > MAX_TOPIC_LENGTH:
        raise InvalidMessage(
            f"topic {topic[:20]!r}... is longer than {MAX_TOPIC_LENGTH} characters"
        )
    if not _NAME.match(topic):
        raise InvalidMessage(f"topic {topic!r} has characters outside [%|a-zA-Z0-9_-]")
    if topic in SYSTEM_TOPICS or topic.startswith("RMQ_SYS_"):
        raise InvalidMessage(f"topic {topic!r} is a RocketMQ system topic")


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


def wrap(namespace: str | None, name: str) -> str:
    """``namespace%name`` (the Java client's namespace wrapping), unless already wrapped."""
    if not namespace or name.startswith(f"{namespace}%"):
        return name
    return f"{namespace}%{name}"
