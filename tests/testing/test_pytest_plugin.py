"""The pytest plugin's rocketmq_namesrv: a running cluster's, when one is named."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from rocketmq_actors.testing.pytest_plugin import TEST_NAMESRV_ENV

ROOT = Path(__file__).resolve().parents[2]


def test_a_named_cluster_is_used_and_none_is_started(tmp_path: Path) -> None:
    (tmp_path / "test_probe.py").write_text(
        "def test_probe(rocketmq_namesrv, request):\n"
        "    assert rocketmq_namesrv == '127.0.0.1:1'\n"
        "    assert 'rocketmq_cluster' not in request.fixturenames\n"
    )
    env = {**os.environ, TEST_NAMESRV_ENV: "127.0.0.1:1"}
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir",
         str(tmp_path), "-c", os.devnull, str(tmp_path)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "1 passed" in ran.stdout
