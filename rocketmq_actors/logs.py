"""structlog configuration helpers for applications and the CLI.

Library code only calls ``structlog.get_logger(...)`` with stable dotted event names
(``cluster.started``, ``cluster.process.launched`` ...) and never configures logging itself.
Applications call :func:`configure_logging` once, or configure structlog their own way.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from typing import TextIO

import structlog

__all__ = ["configure_logging"]


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
