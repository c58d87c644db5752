"""The benchmarks' shared helpers that read the machine."""

from __future__ import annotations

import os
import subprocess
import sys

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
