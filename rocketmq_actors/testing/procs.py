"""Process helpers for the launcher: liveness, ownership by state directory, log tails."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["pid_alive", "pid_is_ours", "tail"]


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie is not alive
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return True


def pid_is_ours(pid: int, marker: str) -> bool:
    """True when ``pid`` is alive and its command line mentions our state directory."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return marker.encode() in fh.read()
    except OSError:
        return False


def tail(path: Path, limit: int = 4000) -> str:
    try:
        data = path.read_bytes()
    except OSError:
        return "(no log)"
    return data[-limit:].decode(errors="replace")
