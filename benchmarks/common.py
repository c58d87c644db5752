"""What every benchmark shares: the machine calibration figure and the results file."""

from __future__ import annotations

import contextlib
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import timeit
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

RESULTS = Path(__file__).resolve().parent / "results"
TREE = Path(__file__).resolve().parents[1]


def run_main(main: Callable[[], int | None]) -> int | None:
    """Run a benchmark's ``main`` with SIGTERM taken as Ctrl-C is: it raises ``SystemExit`` in
    the main thread, so the ``with`` blocks that own scratch directories and child processes
    (null brokers, JVMs, clusters) remove them on the way out, as they do on an interrupt."""

    def stop(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    return main()


def calibration_us() -> float:
    """Best time of ``sum(range(1000))`` in microseconds. The build VM's speed varies
    over minutes; every results file carries this figure so runs can be compared."""
    return round(
        min(timeit.repeat(lambda: sum(range(1000)), number=2000, repeat=5)) / 2000 * 1e6, 2
    )


def percentiles(latencies: Sequence[float]) -> dict[str, float]:
    """p50 and p99 of ``latencies`` (seconds) in ms, one rule for every side."""
    latencies = sorted(latencies)

    def at(p: float) -> float:
        return round(latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1000, 3)

    return {"p50_ms": at(0.5), "p99_ms": at(0.99)}


def process_cpu_s(pid: int | None) -> float | None:
    """User + system CPU seconds of ``pid``, every thread (``None`` if it cannot be read)."""
    split = process_cpu_split(pid)
    return None if split is None else split[0] + split[1]


def process_cpu_split(pid: int | None) -> tuple[float, float] | None:
    """(user, system) CPU seconds of ``pid``, every thread (``None`` if it cannot be read)."""
    if pid is None:
        return None
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def process_tree(root: int) -> dict[int, str]:
    """``root`` and every process under it, with its command name (Linux ``/proc``; empty
    where it cannot be read)."""
    parents: dict[int, tuple[int, str]] = {}
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    head, tail = fh.read().rsplit(")", 1)
            except OSError:  # (gone meanwhile)
                continue
            parents[int(entry)] = (int(tail.split()[1]), head.split("(", 1)[1])
    found = {root: parents[root][1]} if root in parents else {}
    grown = True
    while grown:
        grown = False
        for pid, (parent, name) in parents.items():
            if parent in found and pid not in found:
                found[pid], grown = name, True
    return found


def machine_ticks() -> tuple[int, int] | None:
    """(idle + iowait, total) clock ticks of the whole machine so far; None off Linux."""
    try:
        with open("/proc/stat") as fh:
            ticks = [int(x) for x in fh.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    return ticks[3] + ticks[4], sum(ticks)


def alternating(rounds: int, first: str, second: str) -> Iterator[str]:
    """``rounds`` turns of each side, the order flipped every round (A B, B A, A B, ...), so
    that the machine's slow and fast phases fall on both."""
    for i in range(rounds):
        yield from (first, second) if i % 2 == 0 else (second, first)


def last_json(stdout: str, program: str) -> dict[str, Any]:
    """The last JSON line a benchmark program printed (its figures)."""
    for line in reversed(stdout.splitlines()):
        if line.startswith("{"):
            figures: dict[str, Any] = json.loads(line)
            if "error" in figures:
                raise RuntimeError(f"{program}: {figures['error']}")
            return figures
    raise RuntimeError(f"{program} printed no figures")


class LineProcess:
    """A helper process of a benchmark that answers each line on its stdin with one JSON line
    (the Java programs of ``benchmarks/java``, the peers' ``benchmarks/peer_*.py``); ``quit``
    ends it. ``scratch`` is its working directory (its home and temporary files too, as the
    caller sets them), removed at close; its stderr goes there and ends any error about it."""

    def __init__(
        self, name: str, argv: list[str], scratch: Path, env: dict[str, str] | None = None
    ) -> None:
        self.name = name
        self._scratch = scratch
        self._stderr = scratch / "stderr.log"
        try:
            with open(self._stderr, "wb") as stderr:
                self._proc = subprocess.Popen(
                    argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                    text=True, cwd=scratch, env=env,
                )  # fmt: skip
        except BaseException:
            shutil.rmtree(scratch, ignore_errors=True)
            raise

    @property
    def pid(self) -> int:
        return self._proc.pid

    def reply(self) -> dict[str, Any]:
        """Its next JSON line (other lines are skipped: a client's own log on stdout)."""
        assert self._proc.stdout is not None
        while line := self._proc.stdout.readline():
            if line.startswith("{"):
                reply: dict[str, Any] = json.loads(line)
                if "error" in reply:
                    raise RuntimeError(f"{self.name}: {reply['error']}")
                return reply
        tail = self._stderr.read_text(errors="replace")[-2000:]
        raise RuntimeError(f"{self.name} exited {self._proc.wait()}; its stderr ends:\n{tail}")

    def ask(self, line: str) -> dict[str, Any]:
        assert self._proc.stdin is not None
        self._proc.stdin.write(f"{line}\n")
        self._proc.stdin.flush()
        return self.reply()

    def cpu_s(self) -> float | None:
        """The process's CPU seconds so far (every thread)."""
        return process_cpu_s(self._proc.pid)

    def close(self, timeout: float = 60) -> None:
        if self._proc.stdin is not None and not self._proc.stdin.closed:
            with contextlib.suppress(BrokenPipeError):  # (it may have exited already)
                self._proc.stdin.write("quit\n")
                self._proc.stdin.close()
        try:
            self._proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        if self._proc.stdout is not None:
            self._proc.stdout.close()
        shutil.rmtree(self._scratch, ignore_errors=True)


def write_results(path: Path, figures: dict[str, Any]) -> dict[str, Any]:
    """Write ``figures`` (with Python version and calibration) to ``path`` and one JSON line to
    stdout; return what was written."""
    from rocketmq_actors.protocol.command import JSON_BACKEND

    result = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "calibration_sum_range_1000_us": calibration_us(),
        "json_backend": JSON_BACKEND,
        **figures,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n")
    sys.stdout.write(json.dumps(result) + "\n")
    return result


T = TypeVar("T")


def on_cluster(namesrv: str | None, measure: Callable[[str], T]) -> T:
    """Run ``measure(namesrv)`` on the given cluster, or on a local one started for it."""
    if namesrv:
        return measure(namesrv)
    from rocketmq_actors.testing.cluster import ClusterSpec, LocalCluster

    with LocalCluster(ClusterSpec(jit="full")) as cluster:
        return measure(cluster.namesrv_addr)


JAVA_DIR = Path(__file__).resolve().parent / "java"


def run_java(program: str, *args: object, heap_mb: int = 512) -> list[dict[str, Any]]:
    """Run ``benchmarks/java/<program>.java`` on the cached RocketMQ jars (which include
    ``rocketmq-client``); return the JSON lines it printed."""
    from rocketmq_actors.testing.java import run_java as run

    return run(JAVA_DIR / f"{program}.java", *args, heap_mb=heap_mb)
