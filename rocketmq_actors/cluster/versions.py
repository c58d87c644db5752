"""Broker versions: every remoting response carries its sender's version as an ordinal of Java's
``MQVersion.Version`` enum (``RemotingCommand.version``)."""

from __future__ import annotations

__all__ = ["RECALL_MIN_VERSION", "TIMER_MIN_VERSION", "is_5x", "version_name"]

# MQVersion.Version: from V4_0_0_SNAPSHOT on, a SNAPSHOT and a release per x.y.z, y and z 0-9
# (V4_9_4 = 401, V5_3_3 = 479: CURRENT_VERSION of the 5.3.3 jars)
_V4_0_0_SNAPSHOT = 212
_HIGHER_VERSION = _V4_0_0_SNAPSHOT + 2 * 200  # after V5_9_9

#: V5_0_0_SNAPSHOT: timer delivery (TIMER_DELIVER_MS / TIMER_DELAY_MS, the broker's
#: TimerMessageStore) exists from 5.0 on; a 4.x broker stores such a message as a plain one
TIMER_MIN_VERSION = _V4_0_0_SNAPSHOT + 2 * 100

#: V5_3_2: RECALL_MESSAGE (RecallMessageProcessor, and the send response's recallHandle) is in
#: the 5.3.2 broker, not in 5.3.1's; an older broker answers REQUEST_CODE_NOT_SUPPORTED
RECALL_MIN_VERSION = _V4_0_0_SNAPSHOT + 2 * 132 + 1


def is_5x(version: int) -> bool:
    return version >= TIMER_MIN_VERSION


def version_name(version: int) -> str:
    """``V5_3_3`` for 479, as Java's ``MQVersion.getVersionDesc``; older (3.x) ordinals as
    ``#<n>``."""
    if version >= _HIGHER_VERSION:
        return "HIGHER_VERSION"
    if version < _V4_0_0_SNAPSHOT:
        return f"#{version}"
    index, snapshot = divmod(version - _V4_0_0_SNAPSHOT, 2)
    major, minor, patch = 4 + index // 100, index // 10 % 10, index % 10
    return f"V{major}_{minor}_{patch}" + ("_SNAPSHOT" if snapshot == 0 else "")
