"""docs/compatibility.md's version table names, for every row, the tests that show it: each named
test must exist, so a renamed or deleted test cannot leave a row unbacked."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "compatibility.md"


def table_rows() -> list[list[str]]:
    text = DOC.read_text()
    start = text.index("<!-- compatibility-table: start -->")
    end = text.index("<!-- compatibility-table: end -->")
    lines = [line for line in text[start:end].splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[2:]]


def test_every_row_names_tests_that_exist() -> None:
    rows = table_rows()
    assert len(rows) >= 10
    for row in rows:
        assert len(row) == 5, row
        feature, *versions, tests = row
        assert all(versions), f"{feature}: a version cell is empty"
        named = re.findall(r"`(tests/[\w/]+\.py)::(\w+)`", tests)
        assert named, f"{feature}: names no test"
        for path, function in named:
            source = (ROOT / path).read_text()
            assert re.search(rf"^(async )?def {function}\(", source, re.M), (
                f"{feature}: {path}::{function} does not exist"
            )


def test_the_versions_are_the_ones_make_test_runs() -> None:
    from rocketmq_actors.testing.jars import TESTED_VERSIONS

    header = DOC.read_text().split("<!-- compatibility-table: start -->")[1].splitlines()[1]
    assert [c.strip() for c in header.strip("|").split("|")][1:4] == sorted(TESTED_VERSIONS)
    makefile = (ROOT / "Makefile").read_text()
    compat = re.search(r"^COMPAT_VERSIONS := (.*)$", makefile, re.M)
    assert compat and set(compat.group(1).split()) | {"5.3.3"} == set(TESTED_VERSIONS)
