"""Logging: silent unless the application configures it.

Library modules log through :func:`get_logger` with stable dotted event names
(``connection.opened``, ``consumer.handler_failed`` ...) and keyword fields, and never
configure logging themselves. Where each event goes is decided when it is logged:

* the application configured structlog (``structlog.configure``, or :func:`configure_logging`
  below, which the CLI uses): the event goes through the application's structlog processors,
  unchanged;
* otherwise it goes to the standard ``logging`` hierarchy, to the logger of its module
  (``rocketmq_actors.producer``, ``rocketmq_actors.consumer`` ...), as a record whose message
  reads ``event key=value ...`` and which carries ``record.event`` (the event name) and
  ``record.fields`` (a dict) for formatters that want them. The ``rocketmq_actors`` logger
  has a ``NullHandler``: with no logging configured at all nothing is printed, warnings and
  errors included; ``logging.basicConfig(level=logging.INFO)`` shows everything from INFO up.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import time
from collections.abc import Callable, Hashable
from typing import Any, TextIO

import structlog

__all__ = ["FailureLog", "Logger", "configure_logging", "get_logger"]

ROOT = "rocketmq_actors"
logging.getLogger(ROOT).addHandler(logging.NullHandler())


class _Rendered:
    """A record's message, rendered only if a handler formats it."""

    __slots__ = ("event", "fields")

    def __init__(self, event: str, fields: dict[str, Any]) -> None:
        self.event = event
        self.fields = fields

    def __str__(self) -> str:
        parts = [self.event]
        for key, value in self.fields.items():
            text = value if isinstance(value, str) and value and " " not in value else repr(value)
            parts.append(f"{key}={text}")
        return " ".join(parts)


class Logger:
    """structlog's bound-logger methods over whichever backend the application chose."""

    __slots__ = ("_bound", "_name", "_std")

    def __init__(self, name: str, bound: dict[str, Any] | None = None) -> None:
        self._name = name
        self._std = logging.getLogger(name)
        self._bound = bound or {}

    def bind(self, **fields: Any) -> Logger:
        return Logger(self._name, {**self._bound, **fields})

    def debug(self, event: str, **fields: Any) -> None:
        self._log(logging.DEBUG, "debug", event, fields)

    def info(self, event: str, **fields: Any) -> None:
        self._log(logging.INFO, "info", event, fields)

    def warning(self, event: str, **fields: Any) -> None:
        self._log(logging.WARNING, "warning", event, fields)

    def error(self, event: str, **fields: Any) -> None:
        self._log(logging.ERROR, "error", event, fields)

    def exception(self, event: str, **fields: Any) -> None:
        """An ERROR with the exception being handled."""
        fields.setdefault("exc_info", True)
        self._log(logging.ERROR, "error", event, fields)

    def _log(self, level: int, method: str, event: str, fields: dict[str, Any]) -> None:
        if structlog.is_configured():
            target = structlog.get_logger(self._name)
            if self._bound:
                target = target.bind(**self._bound)
            getattr(target, method)(event, **fields)
            return
        std = self._std
        if not std.isEnabledFor(level):
            return
        exc_info = fields.pop("exc_info", None)
        if self._bound:
            fields = {**self._bound, **fields}
        std.log(
            level, "%s", _Rendered(event, fields), exc_info=exc_info,
            extra={"event": event, "fields": fields}, stacklevel=3,
        )  # fmt: skip


def get_logger(name: str) -> Logger:
    """The logger library modules use (``name`` under ``rocketmq_actors``)."""
    return Logger(name)


class _StderrAtWriteTime:
    """``sys.stderr`` as it is when a line is written (not when logging was configured), and
    a write that fails - a closed or broken stream - drops the line instead of raising into
    the client code that logged it."""

    def write(self, text: str) -> int:
        try:
            return sys.stderr.write(text)
        except (ValueError, OSError):
            return 0

    def flush(self) -> None:
        with contextlib.suppress(ValueError, OSError):
            sys.stderr.flush()


def configure_logging(
    *, json: bool = False, level: int | str = logging.INFO, stream: TextIO | None = None
) -> None:
    """Send structlog events to ``stream`` (stderr by default): key=value for people, or one
    JSON object per line for machines."""
    if isinstance(level, str):
        level = logging.getLevelName(level.upper())
        if not isinstance(level, int):
            raise ValueError(f"unknown log level {level!r}")
    renderer: structlog.types.Processor = (
        structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(stream or _StderrAtWriteTime()),  # type: ignore[arg-type]
        cache_logger_on_first_use=False,
    )


class FailureLog:
    """Rate-limits a log line per key: the first failure of a key is logged, later ones within
    ``interval`` seconds are counted, and the next line logged for that key carries the count."""

    def __init__(self, interval: float = 10.0, *, clock: Callable[[], float] = time.monotonic):
        self.interval = interval
        self._clock = clock
        self._last: dict[Hashable, float] = {}
        self._suppressed: dict[Hashable, int] = {}

    def admit(self, key: Hashable) -> int | None:
        """The number of lines suppressed since the last one, if a line may be logged now;
        None if this one is suppressed."""
        now = self._clock()
        last = self._last.get(key)
        if last is not None and now - last < self.interval:
            self._suppressed[key] = self._suppressed.get(key, 0) + 1
            return None
        self._last[key] = now
        if len(self._last) > 4096:  # queues come and go: forget the oldest
            oldest = min(self._last, key=self._last.__getitem__)
            del self._last[oldest]
            self._suppressed.pop(oldest, None)
        return self._suppressed.pop(key, 0)
