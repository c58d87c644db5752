"""``make test``'s stages, every one run whatever another did, then one summary.

    python -m tests.stages [--busy N] [--only STAGE ...]

Each stage is a Makefile target (``make lint``, ``make pytest``, ``make compat-5.5.0``, ...),
so a stage can also be run alone. The stages of a group run side by side (the pytest sessions
each on its own cluster, see the Makefile), the groups one after another. A stage's output goes to
``.state/test-logs/<stage>.log`` and is printed whole when the stage ends; at the end one table
says what passed, what failed where (the failing tests by name, read from the stage's JUnit
XML), how long each stage took and the CPU it used, and the slowest tests. The exit status is
0 only when every stage passed.

``--busy N`` runs N busy loops (``python -c 'while True: pass'``) beside the stages for the
whole run, as ``make test-busy`` does: the suite must pass on a machine that is busy elsewhere.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

import attrs

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / ".state" / "test-logs"

#: (stage, run beside the others of its group); groups run one after another
GROUPS: tuple[tuple[str, ...], ...] = (
    ("lint", "typecheck"),
    (
        "integration-a", "integration-b", "compat-5.5.0", "compat-4.9.7", "unit",
        "oldest-anyio", "oldest-faststream", "trio",
    ),
    ("solo",),
)  # fmt: skip
STAGES = tuple(stage for group in GROUPS for stage in group)

#: a stage's command, given its name and where its JUnit report goes
Command = Callable[[str, Path], list[str]]


@attrs.define
class Outcome:
    stage: str
    status: str = "not run"  # passed, failed, not run
    returncode: int | None = None
    wall_s: float = 0.0
    cpu_s: float = 0.0
    counts: dict[str, int] = attrs.field(factory=dict)
    failed: list[str] = attrs.field(factory=list)
    slowest: list[tuple[float, str]] = attrs.field(factory=list)


def read_junit(path: Path) -> tuple[dict[str, int], list[str], list[tuple[float, str]]]:
    """(counts by outcome, failed test ids, (seconds, test id) of every test) from a JUnit
    XML report; empty when the stage wrote none."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return {}, [], []
    counts = {"passed": 0, "failed": 0, "error": 0, "skipped": 0}
    failed: list[str] = []
    times: list[tuple[float, str]] = []
    for case in root.iter("testcase"):
        module = case.get("classname", "").replace(".", "/")
        test = f"{module}.py::{case.get('name', '?')}"
        kinds = {child.tag for child in case}
        if "failure" in kinds or "error" in kinds:
            kind = "failed" if "failure" in kinds else "error"
            failed.append(test)
        elif "skipped" in kinds:
            kind = "skipped"
        else:
            kind = "passed"
        counts[kind] += 1
        times.append((float(case.get("time", "0") or 0), test))
    return counts, failed, times


def make(name: str, junit: Path) -> list[str]:
    """The command of a stage: its Makefile target, writing its JUnit report to ``junit``."""
    return ["make", "--no-print-directory", name, f"REPORT={junit}"]


class Stage:
    """One stage's command in a process group of its own, its output to a log file."""

    def __init__(self, name: str, env: dict[str, str], command: Command, logs: Path) -> None:
        self.name = name
        self.log = logs / f"{name}.log"
        self.junit = logs / f"{name}.xml"
        self.junit.unlink(missing_ok=True)
        self.started = time.monotonic()
        self._out = self.log.open("wb")
        self.process = subprocess.Popen(
            command(name, self.junit), cwd=ROOT, env={**env, "ROCKETMQ_ACTORS_STAGE": name},
            stdout=self._out,
            stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        self.outcome = Outcome(name)

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)


def run_group(
    names: Sequence[str], env: dict[str, str], command: Command, logs: Path, out: TextIO
) -> list[Outcome]:
    """Start the stages of a group together; print each one's log as it ends."""
    stages = [Stage(name, env, command, logs) for name in names]
    outcomes: list[Outcome] = []
    try:
        pending = {stage.process.pid: stage for stage in stages}
        while pending:
            pid, status, usage = os.wait4(-1, 0)
            stage = pending.pop(pid, None)
            if stage is None:
                continue  # a busy loop or another child of ours
            stage.process.returncode = os.waitstatus_to_exitcode(status)
            stage._out.close()
            outcome = stage.outcome
            outcome.returncode = stage.process.returncode
            outcome.status = "passed" if outcome.returncode == 0 else "failed"
            outcome.wall_s = time.monotonic() - stage.started
            outcome.cpu_s = usage.ru_utime + usage.ru_stime
            outcome.counts, outcome.failed, outcome.slowest = read_junit(stage.junit)
            outcomes.append(outcome)
            _print_log(stage, outcome, out)
    except BaseException:
        for stage in stages:
            stage.kill()
        raise
    return sorted(outcomes, key=lambda o: names.index(o.stage))


def _print_log(stage: Stage, outcome: Outcome, out: TextIO) -> None:
    out.write(f"\n{'=' * 30} {stage.name}: {outcome.status} in {outcome.wall_s:.0f} s "
              f"{'=' * 30}\n")  # fmt: skip
    out.flush()
    with stage.log.open(errors="replace") as fh:
        shutil.copyfileobj(fh, out)
    out.flush()


def _minutes(seconds: float) -> str:
    return f"{int(seconds // 60)}:{int(seconds % 60):02d}"


def summary(outcomes: Sequence[Outcome], wall_s: float, busy: int) -> str:
    lines = [
        "",
        f"make test summary ({_minutes(wall_s)} wall"
        + (f", {busy} busy loops beside it" if busy else "")
        + f", load average {' '.join(f'{x:.1f}' for x in os.getloadavg())} at the end)",
        "",
        f"{'stage':<18} {'result':<8} {'wall':>6} {'cpu s':>7}  tests",
    ]
    for o in outcomes:
        counts = ", ".join(f"{v} {k}" for k, v in o.counts.items() if v) or "-"
        wall = _minutes(o.wall_s) if o.status != "not run" else "-"
        lines.append(f"{o.stage:<18} {o.status:<8} {wall:>6} {o.cpu_s:>7.0f}  {counts}")
    failed = [o for o in outcomes if o.status == "failed"]
    for o in failed:
        lines.append("")
        lines.append(f"{o.stage} failed (exit {o.returncode}; its log: "
                     f".state/test-logs/{o.stage}.log):")  # fmt: skip
        lines.extend(f"  {test}" for test in o.failed)
    slowest = sorted(((t, f"{o.stage}: {test}") for o in outcomes for t, test in o.slowest),
                     reverse=True)[:10]  # fmt: skip
    if slowest:
        lines.append("")
        lines.append("slowest tests:")
        lines.extend(f"  {t:7.1f} s  {name}" for t, name in slowest)
    lines.append("")
    lines.append("PASSED: every stage" if not failed else
                 f"FAILED: {', '.join(o.stage for o in failed)}")  # fmt: skip
    return "\n".join(lines) + "\n"


def run(
    groups: Sequence[Sequence[str]],
    *,
    busy: int = 0,
    command: Command = make,
    logs: Path = LOGS,
    out: TextIO = sys.stdout,
) -> tuple[int, str]:
    """Run every stage of ``groups`` (the stages of a group side by side, the groups one after
    another), whatever another did; (exit status, summary)."""
    logs.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    loops = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(max(busy, 0))
    ]
    started = time.monotonic()
    outcomes = {stage: Outcome(stage) for group in groups for stage in group}
    status = 0
    try:
        for group in groups:
            for outcome in run_group(group, env, command, logs, out):
                outcomes[outcome.stage] = outcome
    except KeyboardInterrupt:
        out.write("\ninterrupted: the stages not run are listed as such\n")
        status = 130
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()
    report = summary(list(outcomes.values()), time.monotonic() - started, len(loops))
    (logs / "summary.txt").write_text(report)
    if not status:
        status = 0 if all(o.status == "passed" for o in outcomes.values()) else 1
    return status, report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.stages",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--busy", type=int, default=0, metavar="N",
        help="run N busy loops beside the stages (make test-busy: 2)",
    )  # fmt: skip
    parser.add_argument(
        "--only", nargs="+", choices=STAGES, metavar="STAGE",
        help=f"run only these stages (of {', '.join(STAGES)})",
    )  # fmt: skip
    args = parser.parse_args(argv)
    groups = [[s for s in group if not args.only or s in args.only] for group in GROUPS]
    status, report = run([g for g in groups if g], busy=args.busy)
    sys.stdout.write(report)
    return status


if __name__ == "__main__":
    sys.exit(main())
