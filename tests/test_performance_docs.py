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


def _compiled(pure_cpu: float, compiled_cpu: float) -> dict[str, object]:
    codec = {"encode_send_v2_us": 1.0}
    return {
        "settings": {"rounds": 1},
        "modules": {"framing": "ok", "headers": "mypyc refuses it: a | b"},
        "codec": {"pure": [codec], "compiled": [codec]},
        "b_pipelined_1k": {
            "pure": {"msgs_per_s": 1, "client_cpu_us_per_msg": pure_cpu},
            "compiled": {"msgs_per_s": 1, "client_cpu_us_per_msg": compiled_cpu},
        },
    }


def test_the_mypyc_verdict_follows_the_measured_saving() -> None:
    kept = "\n".join(docs._compiled_section(_compiled(10.0, 9.5)))
    assert "saved 5.0%" in kept
    assert "not met: not shipped" in kept
    assert "| `headers` | mypyc refuses it: a / b |" in kept  # a table cell, not two
    shipped = "\n".join(docs._compiled_section(_compiled(10.0, 8.5)))
    assert "saved 15.0%" in shipped
    assert "met: worth shipping" in shipped
