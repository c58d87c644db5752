"""Every Python snippet of README.md and docs/*.md is a complete program: each one is extracted
and run, as pasted into a file, against the session cluster (its NameServer in NAMESRV_ADDR,
as a user's shell has it after ``rocketmq-actors cluster start``).

A snippet that cannot run here says why on the line before its fence::

    <!-- snippet: no-run (needs a broker with ACL and TLS) -->

and shows up as a skip with that reason.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```python\n(.*?)^```", flags=re.S | re.M)
NO_RUN = re.compile(r"<!-- snippet: no-run \((.+)\) -->\s*$")
# a snippet finishes in seconds (the Spark one starts a JVM); the limit only bounds a hang
RUN_TIMEOUT = 180.0

pytestmark = pytest.mark.integration


@attrs.frozen
class Snippet:
    path: Path
    line: int
    code: str
    no_run: str | None

    @property
    def name(self) -> str:
        return f"{self.path.name}:{self.line}"


def snippets() -> list[Snippet]:
    found = []
    for path in DOCUMENTS:
        text = path.read_text()
        for match in FENCE.finditer(text):
            before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
            marker = NO_RUN.search(before)
            found.append(
                Snippet(
                    path=path,
                    line=text.count("\n", 0, match.start()) + 1,
                    code=match.group(1),
                    no_run=marker.group(1) if marker else None,
                )
            )
    return found


SNIPPETS = snippets()


def test_the_documents_have_snippets_and_few_are_skipped() -> None:
    assert len(SNIPPETS) >= 20
    skipped = [s.name for s in SNIPPETS if s.no_run]
    assert len(skipped) <= 3, skipped


def _marked(snippet: Snippet) -> Any:
    """A snippet that starts Spark is ``solo``: make test runs it alone, after the sessions."""
    return pytest.param(snippet, marks=[pytest.mark.solo] if "pyspark" in snippet.code else [])


@pytest.mark.parametrize("snippet", [_marked(s) for s in SNIPPETS], ids=lambda s: s.name)
def test_snippet_runs_as_pasted(snippet: Snippet, rocketmq_namesrv: str, tmp_path: Path) -> None:
    if snippet.no_run:
        pytest.skip(f"{snippet.name} is marked no-run: {snippet.no_run}")
    program = tmp_path / "snippet.py"
    program.write_text(snippet.code)
    env = {
        **os.environ,
        "NAMESRV_ADDR": rocketmq_namesrv,
        # a snippet that is a pytest run (the README's) uses this cluster, not one of its own
        "ROCKETMQ_ACTORS_TEST_NAMESRV": rocketmq_namesrv,
        "PYTHONPATH": str(ROOT),
        "TMPDIR": str(tmp_path),  # a snippet's temporary files (a cluster's store) stay here
        # Spark's JVMs write /tmp/hsperfdata_<user> whatever TMPDIR says, unless told not to
        "SPARK_LAUNCHER_OPTS": "-XX:-UsePerfData",
        "SPARK_SUBMIT_OPTS": "-XX:-UsePerfData",
    }
    done = subprocess.run(
        [sys.executable, str(program)],
        cwd=tmp_path,  # whatever a snippet writes stays in the test's directory
        env=env,
        capture_output=True,
        check=False,
        text=True,
        timeout=RUN_TIMEOUT,
    )
    assert done.returncode == 0, (
        f"{snippet.name} exited {done.returncode}\n"
        f"--- stdout\n{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-6000:]}"
    )
    assert "Traceback" not in done.stderr, done.stderr[-6000:]
