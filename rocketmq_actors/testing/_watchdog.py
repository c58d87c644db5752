"""Kills a cluster's JVMs when the process that launched them dies.

Run as ``python -m rocketmq_actors.testing._watchdog MARKER`` with a pipe on stdin. The launcher
writes one pid per line as it starts JVMs. When stdin reaches end-of-file - the launcher exited,
crashed or was SIGKILLed - every listed pid still alive whose command line contains MARKER
(the cluster's state directory, so a reused pid is never hit) gets SIGKILL.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys


def _is_ours(pid: int, marker: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return marker in fh.read()
    except OSError:
        return False


def main() -> int:
    marker = sys.argv[1].encode()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the launcher's business
    pids: set[int] = set()
    for raw in sys.stdin:
        text = raw.strip()
        if text.isdigit():
            pids.add(int(text))
    for pid in pids:
        if _is_ours(pid, marker):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
