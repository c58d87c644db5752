"""``rocketmq-actors produce`` against the real cluster, in a subprocess as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration


def test_produce_json(rocketmq_namesrv: str, unique_topic: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "rocketmq_actors", "produce", "--namesrv", rocketmq_namesrv,
         "--topic", unique_topic, "--count", "500", "--size", "1024", "--keys", "--tags", "t",
         "--json"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["sent"] == 500 and result["failed"] == 0 and result["msgs_per_s"] > 0


def test_produce_to_an_unreachable_name_server_fails_in_one_line() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "rocketmq_actors", "produce", "--namesrv", "127.0.0.1:1",
         "--topic", "T", "--timeout", "1", "--json"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert proc.returncode == 1
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["sent"] == 0 and result["failed"] == 1 and "NameServer" in result["last_error"]
