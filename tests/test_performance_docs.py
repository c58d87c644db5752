"""docs/performance.md and the README's performance table are what benchmarks/results gives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import docs
from benchmarks.common import RESULTS


def test_performance_page_and_readme_table_are_generated_from_the_results() -> None:
    assert docs.main(["--check"]) == 0, "run: python -m benchmarks.docs"


def test_the_check_sees_a_stale_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stale = tmp_path / "performance.md"
    stale.write_text(docs.performance_md().replace("Method", "Methods"))
    monkeypatch.setattr(docs, "PERFORMANCE", stale)
    assert docs.main(["--check"]) == 1


def test_every_figure_of_the_readme_table_is_in_a_publishable_nullbroker_json() -> None:
    null = json.loads((RESULTS / "nullbroker.json").read_text())
    assert null["verdict"]["publishable"], null["verdict"]["why"]
    block = docs.README.read_text().split(docs.BEGIN, 1)[1].split(docs.END, 1)[0]
    assert f"run `{null['run_id']}`" in block
    for name, p in null["paths"].items():
        assert (
            f"| {name} | {p['ours']} / {p['java']} | {p['ratio']} | {p['cpu_us_per_msg_ours']} / "
            f"{p['cpu_us_per_msg_java']} | {p['cpu_ratio_java_over_ours']} |"
        ) in block


def test_no_ratio_from_a_results_file_without_a_verdict_is_published() -> None:
    page = docs.PERFORMANCE.read_text()
    for name in docs.NOT_PUBLISHED:
        assert f"## Against the Java client (`{name}.json`)" not in page
        assert f"`{name}.json`:" in page  # (listed as not published)
