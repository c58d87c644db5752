"""Tests that run a program as a process of their own: its JSON lines as events."""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import time
import weakref
from collections.abc import Callable
from typing import Any

__all__ = ["job_events"]

#: each process's output read from its pipe and not yet split into lines
_PENDING: weakref.WeakKeyDictionary[subprocess.Popen[str], bytearray] = weakref.WeakKeyDictionary()


def job_events(process: subprocess.Popen[str], until: Callable[[dict[str, Any]], bool],
               timeout: float) -> list[dict[str, Any]]:  # fmt: skip
    """The job's JSON lines up to the first that satisfies ``until`` (the lines after it are
    kept for the next call). The pipe is read unbuffered: lines that arrived together are
    never left in a buffer that ``select`` does not see."""
    assert process.stdout is not None
    fd = process.stdout.fileno()
    pending = _PENDING.setdefault(process, bytearray())
    seen: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while True:
            while b"\n" in pending:
                end = pending.index(b"\n")
                line = pending[:end].decode(errors="replace")
                del pending[: end + 1]
                if line.startswith("{"):
                    seen.append(json.loads(line))
                    if until(seen[-1]):
                        return seen
            left = deadline - time.monotonic()
            if left <= 0 or not selector.select(left):
                raise AssertionError(f"no such event within {timeout} s; saw {seen}")
            chunk = os.read(fd, 65536)
            if not chunk:
                raise AssertionError(f"the job exited ({process.wait()}); saw {seen}")
            pending += chunk
