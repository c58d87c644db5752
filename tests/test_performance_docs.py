"""docs/performance.md and the README's performance table are what benchmarks/results gives."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from benchmarks import docs
from benchmarks.common import RESULTS


def test_performance_page_and_readme_table_are_generated_from_the_results() -> None:
    assert docs.main(["--check"]) == 0, "run: python -m benchmarks.docs"


def test_every_figure_of_the_readme_table_is_in_compare_json() -> None:
    compare = json.loads((RESULTS / "compare.json").read_text())
    block = docs.README.read_text().split(docs.BEGIN, 1)[1].split(docs.END, 1)[0]
    table = block.split("\n\n", 1)[0]
    for name, path in compare["paths"].items():
        assert re.search(
            rf"\| {name} \|.*\| {path['ours']} \| {path['java']} \| {path['ratio']} \|", table
        )


def test_the_check_sees_a_stale_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stale = tmp_path / "performance.md"
    stale.write_text(docs.performance_md().replace("Method", "Methods"))
    monkeypatch.setattr(docs, "PERFORMANCE", stale)
    assert docs.main(["--check"]) == 1


def test_every_figure_of_the_readme_null_table_is_in_nullbroker_json() -> None:
    null = json.loads((RESULTS / "nullbroker.json").read_text())
    block = docs.README.read_text().split(docs.BEGIN, 1)[1].split(docs.END, 1)[0]
    for name, p in null["paths"].items():
        assert (
            f"| {name} | {p['ours']} / {p['java']} | {p['ratio']} | {p['cpu_us_per_msg_ours']} / "
            f"{p['cpu_us_per_msg_java']} |"
        ) in block
