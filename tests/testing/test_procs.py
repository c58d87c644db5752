"""Process helpers of the launcher, on a stand-in process (no Java needed)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from rocketmq_actors.testing.procs import wait_stopped


def test_wait_stopped_returns_once_every_thread_is_stopped(tmp_path: Path) -> None:
    """pause_broker waits with it: SIGSTOP takes effect as each thread next runs."""
    threads = "import threading, time; [threading.Thread(target=time.sleep, args=(120,)).start() for _ in range(4)]; time.sleep(120)"  # noqa: E501
    proc = subprocess.Popen([sys.executable, "-c", threads])
    try:
        assert not wait_stopped(proc.pid, timeout=0.2)  # running: not stopped
        os.kill(proc.pid, signal.SIGSTOP)
        assert wait_stopped(proc.pid)
        states = {(task / "stat").read_text().rsplit(")", 1)[-1].split()[0]
                  for task in Path(f"/proc/{proc.pid}/task").iterdir()}  # fmt: skip
        assert states <= {"T", "t"} and len(list(Path(f"/proc/{proc.pid}/task").iterdir())) == 5
        os.kill(proc.pid, signal.SIGCONT)
    finally:
        proc.kill()
        proc.wait()
    assert not wait_stopped(proc.pid, timeout=0.2)  # gone
