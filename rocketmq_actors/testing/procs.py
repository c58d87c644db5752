"""Process helpers for the launcher: liveness, ownership by state directory, log tails."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

__all__ = [
    "log_contains",
    "pid_alive",
    "pid_is_ours",
    "release_watchdog",
    "tail",
    "wait_stopped",
    "watch_pid",
]


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


def wait_stopped(pid: int, timeout: float = 10.0) -> bool:
    """Wait until every thread of ``pid`` is stopped (``SIGSTOP`` takes effect as each thread
    next runs: a JVM may answer a request or two after the signal was sent): True once all
    are, False at ``timeout`` or where ``/proc`` cannot say."""
    deadline = time.monotonic() + timeout
    tasks = Path(f"/proc/{pid}/task")
    while time.monotonic() < deadline:
        try:
            states = [
                (task / "stat").read_text().rsplit(")", 1)[-1].split()[0]
                for task in tasks.iterdir()
            ]
        except OSError:  # gone, or no /proc
            return False
        if states and all(state in ("T", "t") for state in states):
            return True
        time.sleep(0.01)  # (polling the kernel's state: nothing to wait on instead)
    return False


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


def log_contains(path: Path, offset: int, needle: bytes) -> bool:
    """Whether the log at ``path`` has ``needle`` after ``offset`` (this launch's part)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            return needle in fh.read()
    except OSError:
        return False


def watch_pid(
    watchdog: subprocess.Popen[bytes] | None, state_dir: Path, pid: int, *, owned: bool = False
) -> subprocess.Popen[bytes]:
    """Hand ``pid`` to the watchdog process (started if ``watchdog`` is None or gone), which
    SIGKILLs it when this process dies, and then deletes ``state_dir`` if ``owned`` (the
    launcher created it: nothing of a dead run is left in the temporary directory)."""
    if watchdog is None or watchdog.poll() is not None:
        argv = [sys.executable, "-m", "rocketmq_actors.testing._watchdog", str(state_dir)]
        watchdog = subprocess.Popen(
            [*argv, "--remove"] if owned else argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            start_new_session=True,
        )
    assert watchdog.stdin is not None
    watchdog.stdin.write(f"{pid}\n".encode())
    watchdog.stdin.flush()
    return watchdog


def release_watchdog(watchdog: subprocess.Popen[bytes] | None) -> None:
    """Once nothing of ours is alive: the watchdog exits doing nothing."""
    if watchdog is not None:
        watchdog.communicate(b"release\n")  # (a watchdog that is gone: nothing to tell)
