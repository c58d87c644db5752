"""The benchmarks' shared helpers that read the machine."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.common import process_cpu_s, process_tree

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc (Linux only)")


def test_process_tree_has_the_root_and_its_children_by_name() -> None:
    with subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                          stdin=subprocess.PIPE) as child:  # fmt: skip
        try:
            tree = process_tree(os.getpid())
            assert child.pid in tree and os.getpid() in tree
            assert tree[child.pid].startswith("python")
            assert process_tree(child.pid) == {child.pid: tree[child.pid]}
            cpu = process_cpu_s(child.pid)
            assert cpu is not None and cpu >= 0
        finally:
            assert child.stdin is not None
            child.stdin.close()
    assert child.pid not in process_tree(os.getpid())
    assert process_tree(child.pid) == {}


_HOLDS_A_SCRATCH_DIR = """
import sys, tempfile, anyio
from benchmarks.common import run_main

def main() -> int:
    with tempfile.TemporaryDirectory(dir=sys.argv[1]) as scratch:
        print(scratch, flush=True)
        anyio.run(anyio.sleep_forever)  # (a benchmark's windows, on the event loop)
    return 0

raise SystemExit(run_main(main))
"""


def test_a_terminated_benchmark_removes_what_its_with_blocks_own(tmp_path: Path) -> None:
    """``kill <pid>`` of a benchmark leaves no scratch directory (nor, so, a child process)."""
    with subprocess.Popen([sys.executable, "-c", _HOLDS_A_SCRATCH_DIR, str(tmp_path)],
                          stdout=subprocess.PIPE, text=True) as child:  # fmt: skip
        assert child.stdout is not None
        scratch = child.stdout.readline().strip()  # (it runs, inside its with block)
        assert os.path.isdir(scratch)
        child.terminate()
        assert child.wait(timeout=60) == 128 + 15
    assert not os.path.exists(scratch)
    assert list(tmp_path.iterdir()) == []
