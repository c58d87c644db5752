"""Where a pytest session's time and CPU go, test by test (a pytest plugin, loaded by
tests/conftest.py).

With ``ROCKETMQ_ACTORS_TIMING=<directory>`` the session writes ``<directory>/<stage>.json`` at its
end (the stage named by ``ROCKETMQ_ACTORS_STAGE``, else the broker version), one record per test:
its wall time (setup, call and teardown together) and the CPU time spent meanwhile by this
process and every process below it - the brokers a test starts, its Java peers, Spark's JVM and
workers, the CLI subprocesses - read from ``/proc`` (live processes) and ``getrusage`` (the
children this process reaped). A session fixture's cost lands on the first test that asks for
it. ``python -m tests.stages`` sets the variable for each stage and prints the slowest tests
from these files; without it nothing is measured.
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

ENV = "ROCKETMQ_ACTORS_TIMING"
STAGE_ENV = "ROCKETMQ_ACTORS_STAGE"
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def proc_stat(pid: str) -> tuple[int, float] | None:
    """(parent pid, CPU seconds of the process and of the children it reaped)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    utime, stime, cutime, cstime = (int(v) for v in fields[11:15])
    return int(fields[1]), (utime + stime + cutime + cstime) / _TICK


def descendants_cpu(root: int) -> float:
    """CPU seconds of every live process below ``root`` (not ``root`` itself)."""
    parents: dict[int, int] = {}
    cpu: dict[int, float] = {}
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return 0.0
    for name in pids:
        found = proc_stat(name)
        if found is not None:
            parents[int(name)], cpu[int(name)] = found
    total = 0.0
    for pid, seconds in cpu.items():
        ancestor: int | None = parents.get(pid)
        for _ in range(64):  # (a bound on the walk up; trees are a few levels deep)
            if ancestor is None or ancestor == root:
                break
            ancestor = parents.get(ancestor)
        if ancestor == root:
            total += seconds
    return total


def tree_cpu() -> float:
    """CPU seconds of this process, the children it reaped, and every live descendant."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    mine = own.ru_utime + own.ru_stime + reaped.ru_utime + reaped.ru_stime
    return mine + descendants_cpu(os.getpid())


class Timing:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.records: list[dict[str, Any]] = []
        self.started = time.monotonic()
        self.cpu_started = tree_cpu()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, None, None]:
        wall, cpu = time.monotonic(), tree_cpu()
        yield
        self.records.append(
            {
                "test": item.nodeid,
                "wall_s": round(time.monotonic() - wall, 3),
                "cpu_s": round(tree_cpu() - cpu, 3),
            }
        )

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        report = {
            "wall_s": round(time.monotonic() - self.started, 1),
            "cpu_s": round(tree_cpu() - self.cpu_started, 1),
            "tests": self.records,
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(report, indent=1) + "\n")


def pytest_configure(config: pytest.Config) -> None:
    # (taken out of the environment: a pytest that a test starts is not this session)
    target = os.environ.pop(ENV, None)
    stage = os.environ.pop(STAGE_ENV, None)
    if target:
        stage = stage or config.getoption("--rocketmq-version")
        timing = Timing(Path(target) / f"{stage}.json")
        config.pluginmanager.register(timing, "rocketmq-actors-timing")
