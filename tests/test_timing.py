"""tests/timing.py: CPU of a process tree, the tests' figures written when asked."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from tests.timing import descendants_cpu, proc_stat, tree_cpu

ROOT = Path(__file__).resolve().parents[1]


def test_a_busy_child_counts_in_the_tree_alive_and_once_reaped() -> None:
    # (other descendants may come and go meanwhile - a session's brokers - so the checks
    # are lower bounds, from the child's own figure, and the reaped count only grows)
    reaped_before = _reaped()
    child = subprocess.Popen([sys.executable, "-c", "import time\nt=time.process_time()\n"
                              "while time.process_time() - t < 0.3: pass\ninput()"],
                             stdin=subprocess.PIPE)  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while (proc_stat(str(child.pid)) or (0, 0.0))[1] < 0.25:  # (polling /proc)
            assert time.monotonic() < deadline, "the child never used its CPU"
            time.sleep(0.05)
        assert descendants_cpu(os.getpid()) >= 0.25
    finally:
        child.communicate(b"\n")
    assert _reaped() - reaped_before >= 0.25
    assert tree_cpu() >= _reaped()


def _reaped() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def test_the_session_writes_one_record_per_test_when_asked(tmp_path: Path) -> None:
    (tmp_path / "test_two.py").write_text("def test_a():\n    pass\n\ndef test_b():\n    pass\n")
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["tests.timing"]\n')
    out = tmp_path / "timing"
    env = {
        **os.environ,
        "ROCKETMQ_ACTORS_TIMING": str(out),
        "ROCKETMQ_ACTORS_STAGE": "unit",
        "PYTHONPATH": str(ROOT),
    }
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path),
         "-c", os.devnull, str(tmp_path)],
        env=env, cwd=tmp_path, capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((out / "unit.json").read_text())
    assert [r["test"].rsplit("::", 1)[1] for r in report["tests"]] == ["test_a", "test_b"]
    assert all(r["wall_s"] >= 0 and r["cpu_s"] >= 0 for r in report["tests"])
