"""tests/stages.py: every stage runs whatever another did, and one summary says what failed."""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

from tests.stages import ROOT, STAGES, Command, make, read_junit, run

# a stage as a test sees it: writes the JUnit report pytest would (its path from
# PYTEST_ADDOPTS) with the given outcome, prints a line, exits with the given status
FAKE = """
import sys
name, failing, path = sys.argv[1], sys.argv[2] == "fail", sys.argv[3]
case = '<testcase classname="tests.test_x" name="test_%s" time="1.5">%s</testcase>' % (
    name, "<failure message='boom'/>" if failing else "")
open(path, "w").write('<testsuites><testsuite>%s%s</testsuite></testsuites>' % (
    case, '<testcase classname="tests.test_y" name="test_ok" time="0.2"/>'))
print("output of", name)
sys.exit(1 if failing else 0)
"""


def _command(tmp_path: Path, outcomes: dict[str, str]) -> Command:
    script = tmp_path / "fake_stage.py"
    script.write_text(FAKE)
    return lambda name, junit: [sys.executable, str(script), name, outcomes[name], str(junit)]


def test_a_failed_stage_neither_stops_the_later_ones_nor_hides_in_the_summary(
    tmp_path: Path,
) -> None:
    outcomes = {"first": "fail", "beside": "pass", "later": "pass"}
    status, report = run(
        [["first", "beside"], ["later"]],
        command=_command(tmp_path, outcomes),
        logs=tmp_path / "logs",
        out=(out := io.StringIO()),
    )
    assert status == 1
    assert "output of later" in out.getvalue()  # each stage's log, printed as it ended
    assert "FAILED: first" in report
    assert "tests/test_x.py::test_first" in report  # the failing test, by name
    rows = {line.split()[0]: line.split()[1] for line in report.splitlines()[4:7]}
    assert rows == {"first": "failed", "beside": "passed", "later": "passed"}
    assert "output of later" in (tmp_path / "logs" / "later.log").read_text()
    assert (tmp_path / "logs" / "summary.txt").read_text() == report


def test_every_stage_passing_is_status_0(tmp_path: Path) -> None:
    status, report = run(
        [["only"]],
        command=_command(tmp_path, {"only": "pass"}),
        logs=tmp_path / "logs",
        busy=1,
        out=io.StringIO(),
    )
    assert status == 0 and "PASSED: every stage" in report
    assert "1 busy loops beside it" in report


def test_a_stage_is_its_makefile_target_and_names_its_report_there(tmp_path: Path) -> None:
    """(Not through PYTEST_ADDOPTS: every pytest a test starts would inherit it and write
    over the session's report.)"""
    assert make("compat-5.5.0", tmp_path / "r.xml") == [
        "make", "--no-print-directory", "compat-5.5.0", f"REPORT={tmp_path / 'r.xml'}"
    ]  # fmt: skip
    makefile = (Path(__file__).resolve().parents[1] / "Makefile").read_text()
    assert "$(if $(REPORT),--junitxml=$(REPORT))" in makefile


def test_a_stage_that_wrote_no_report_counts_nothing(tmp_path: Path) -> None:
    assert read_junit(tmp_path / "missing.xml") == ({}, [], [])
    (tmp_path / "broken.xml").write_text("<testsuites><testsuite>")
    assert read_junit(tmp_path / "broken.xml") == ({}, [], [])


#: a test function (or fixture) with the shared two-master cluster among its parameters
ASKS_FOR_TWO_MASTERS = re.compile(r"def \w+\([^)]*\brocketmq_two_masters\b")


def _dry_run(target: str) -> str:
    """The command ``make`` would run for ``target`` (``make -n``: nothing runs)."""
    done = subprocess.run(
        ["make", "-n", "--no-print-directory", target], cwd=ROOT, capture_output=True,
        text=True, check=True,
    )  # fmt: skip
    return done.stdout.replace("\\\n", " ")


def _markers(command: str) -> str:
    return command.split('-m "', 1)[1].split('"', 1)[0]


def _makefile_list(name: str) -> list[str]:
    """The words of a ``NAME := ...`` assignment of the Makefile (continuation lines too)."""
    text = (ROOT / "Makefile").read_text().replace("\\\n", " ")
    (line,) = [line for line in text.splitlines() if line.startswith(f"{name} :=")]
    return line.split(":=", 1)[1].split()


def test_the_two_integration_sessions_share_out_the_tests_and_one_two_master_cluster() -> None:
    """integration-b runs every integration test integration-a does not (it ignores a's
    paths), so none is lost; a's paths exist, and hold every test of the shared two-master
    cluster, so that only one session starts one."""
    paths = _makefile_list("INTEGRATION_A")
    assert paths and all((ROOT / path).exists() for path in paths)
    a, b = (_dry_run(f"integration-{half}") for half in ("a", "b"))
    assert all(path in a.split() for path in paths)  # what make runs, not what it says
    assert all(f"--ignore={path}" in b.split() for path in paths)
    assert _markers(a) == _markers(b) and "--basetemp=" in a and "--basetemp=" in b
    assert {"integration-a", "integration-b"} <= set(STAGES) and "integration" not in STAGES
    users = {
        path.relative_to(ROOT)
        for path in (ROOT / "tests").rglob("test_*.py")
        if ASKS_FOR_TWO_MASTERS.search(path.read_text()) and "chaos" not in path.parts
    }
    assert users  # (the search would find none if the fixture were renamed)
    outside = {u for u in users if not any(u.is_relative_to(p) for p in paths)}
    assert not outside, f"tests of the two-master cluster outside INTEGRATION_A: {outside}"
