"""What the peers' programs (``benchmarks/peer_*.py``) share: the stdin/stdout protocol of the
other side of ``benchmarks/paired.py`` and ``benchmarks/peers.py``. Standard library only: it
runs in a peer's scratch virtualenv, beside that client and never ours."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable
from typing import Any

BODY = b"x" * 1024  # the message body of every path, as ours and the Java side send

# (address, topic, warm-up seconds, concurrency) and (address, topic, group, count)
Windows = Callable[[str, str, float, int], None]
Drain = Callable[[str, str, str, int], None]


def reply(figures: dict[str, Any]) -> None:
    """One JSON line on stdout (the harness skips every other line)."""
    sys.stdout.write(json.dumps(figures) + "\n")
    sys.stdout.flush()


def silence_logging() -> None:
    """A client's log on stdout would interleave the replies: off, for the whole process."""
    logging.disable(logging.CRITICAL)


def run(argv: list[str], windows: Windows, drain: Drain) -> int:
    """``windows ADDRESS TOPIC WARMUP CONCURRENCY`` or ``drain ADDRESS TOPIC GROUP COUNT``.
    A program calls :func:`silence_logging` first (never the harness's own process)."""
    if argv[:1] == ["windows"] and len(argv) == 5:
        windows(argv[1], argv[2], float(argv[3]), int(argv[4]))
    elif argv[:1] == ["drain"] and len(argv) == 5:
        drain(argv[1], argv[2], argv[3], int(argv[4]))
    else:
        reply({"error": f"usage: windows|drain ADDRESS TOPIC ARG ARG, not {argv}"})
        return 2
    return 0
