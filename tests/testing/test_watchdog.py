"""The watchdog that outlives a launcher, with a stand-in for a JVM (a process whose command
line names the state directory): no Java needed, so it runs in every session quickly."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


def _stand_in(state_dir: Path) -> subprocess.Popen[bytes]:
    """A process that lives until killed, its command line naming ``state_dir``."""
    return subprocess.Popen(
        [sys.executable, "-c", "import time, sys; time.sleep(120)", str(state_dir)]
    )


def _watchdog(state_dir: Path, *flags: str) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "rocketmq_actors.testing._watchdog", str(state_dir), *flags]
    return subprocess.Popen(argv, stdin=subprocess.PIPE)


@pytest.mark.parametrize("remove", [True, False])
def test_a_launcher_gone_without_release_leaves_no_process_and_no_owned_directory(
    tmp_path: Path, remove: bool
) -> None:
    state_dir = tmp_path / "cluster"
    (state_dir / "store").mkdir(parents=True)
    jvm = _stand_in(state_dir)
    try:
        watchdog = _watchdog(state_dir, *(["--remove"] if remove else []))
        watchdog.communicate(f"{jvm.pid}\n".encode(), timeout=60)  # (then end-of-file)
        assert jvm.wait(timeout=10) == -9  # SIGKILLed
        assert state_dir.exists() is not remove  # deleted only when the launcher made it
    finally:
        jvm.kill()
        jvm.wait()


def test_release_leaves_everything_as_it_is(tmp_path: Path) -> None:
    state_dir = tmp_path / "cluster"
    state_dir.mkdir()
    survivor = _stand_in(state_dir)
    try:
        watchdog = _watchdog(state_dir, "--remove")
        watchdog.communicate(f"{survivor.pid}\nrelease\n".encode(), timeout=60)
        assert watchdog.returncode == 0
        assert survivor.poll() is None and state_dir.exists()  # the launcher's to deal with
    finally:
        survivor.kill()
        survivor.wait()


def test_a_reused_pid_is_not_killed(tmp_path: Path) -> None:
    """A listed pid whose command line does not name the state directory is someone else's."""
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        watchdog = _watchdog(tmp_path / "cluster")
        watchdog.communicate(f"{other.pid}\n".encode(), timeout=60)
        assert other.poll() is None
    finally:
        other.kill()
        other.wait()
