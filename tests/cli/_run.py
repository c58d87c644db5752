"""Running the CLI as a user does: a subprocess, its JSON parsed."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import anyio


def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rocketmq_actors", *args],
        capture_output=True, text=True, timeout=120, check=False, input=stdin,
    )  # fmt: skip


def ok_json(*args: str, stdin: str | None = None) -> Any:
    """Run with ``--json``; exit 0 expected; the last stdout line parsed."""
    proc = cli(*args, "--json", stdin=stdin)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


async def acli(*args: str) -> subprocess.CompletedProcess[str]:
    return await anyio.to_thread.run_sync(lambda: cli(*args))


async def aok_json(*args: str) -> Any:
    return await anyio.to_thread.run_sync(lambda: ok_json(*args))


def one_line_error(proc: subprocess.CompletedProcess[str], status: int, *words: str) -> None:
    assert proc.returncode == status, (proc.returncode, proc.stderr)
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    for word in words:
        assert word in proc.stderr, proc.stderr
