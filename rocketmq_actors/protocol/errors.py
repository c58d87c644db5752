"""The one exception family the sans-IO layer raises on bad bytes, and the base of every
error the package raises (defined here, the lowest layer, so that this family is part of it;
:mod:`rocketmq_actors.errors` exports it with the rest)."""

from __future__ import annotations

__all__ = ["FrameTooLarge", "ProtocolError", "RocketMQError"]


class RocketMQError(Exception):
    r"""Base of every error rocketmq-actors raises, bad arguments included (:class:`ConfigError`
    and :class:`InvalidMessage` are also ``ValueError``\ s)."""

    __module__ = "rocketmq_actors.errors"

    retriable: bool = False
    outcome_unknown: bool = False


class ProtocolError(RocketMQError):
    """Bytes that do not form a valid RocketMQ remoting frame, header or body.

    ``reason`` is a short stable identifier (``"frame-too-large"``, ``"bad-header-json"`` ...)
    that callers may switch on; the message adds detail for humans.
    """

    def __init__(self, reason: str, detail: str = "") -> None:
        self.reason = reason
        self.detail = detail
        super().__init__(f"{reason}: {detail}" if detail else reason)


class FrameTooLarge(ProtocolError):
    """A frame announced more bytes than the configured limit (16 MiB by default)."""

    def __init__(self, size: int, limit: int) -> None:
        self.size = size
        self.limit = limit
        super().__init__("frame-too-large", f"frame of {size} bytes exceeds the {limit}-byte limit")
