"""Kills a cluster's JVMs when the process that launched them dies.

Run as ``python -m rocketmq_actors.testing._watchdog MARKER [--remove]`` with a pipe on
stdin. The launcher writes one pid per line as it starts JVMs, and ``release`` when it has
stopped them itself. When stdin reaches end-of-file without ``release`` - the launcher
crashed, was killed, or its CI job timed out - every listed pid still alive whose command
line contains MARKER (the cluster's state directory, so a reused pid is never hit) gets
SIGKILL; then, with ``--remove``, MARKER itself (a state directory the launcher created,
stores and logs in it) is deleted once those processes are gone.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import time


def _is_ours(pid: int, marker: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return marker in fh.read()
    except OSError:
        return False


def main() -> int:
    marker = sys.argv[1].encode()
    remove = "--remove" in sys.argv[2:]
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the launcher's business
    pids: set[int] = set()
    released = False
    for raw in sys.stdin:
        text = raw.strip()
        if text.isdigit():
            pids.add(int(text))
        elif text == "release":
            released = True
    if released:
        return 0
    for pid in pids:
        if _is_ours(pid, marker):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    if remove:
        # (a killed JVM no longer names the directory, a zombie's command line being empty)
        deadline = time.monotonic() + 30
        while any(_is_ours(pid, marker) for pid in pids) and time.monotonic() < deadline:
            time.sleep(0.1)
        shutil.rmtree(sys.argv[1], ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
