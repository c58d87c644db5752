"""The one exception family the sans-IO layer raises on bad bytes, and :func:`caused`."""

from __future__ import annotations

from typing import TypeVar

__all__ = ["FrameTooLarge", "ProtocolError", "caused"]

_E = TypeVar("_E", bound=BaseException)


def caused(error: _E, cause: BaseException | None) -> _E:
    """``error`` with ``cause`` as its ``__cause__``: ``raise caused(error, cause)`` is
    ``raise error from cause`` (``None`` hides the exception being handled), written so in the
    modules mypyc may compile, which build ``raise ... from ...`` without its ``from``
    (docs/performance.md; tests/protocol/test_errors.py holds them to it)."""
    error.__cause__ = cause  # (which sets __suppress_context__, as ``from`` does)
    return error


class ProtocolError(Exception):
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
