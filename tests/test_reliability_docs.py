"""docs/reliability.md's chaos table is what benchmarks/results/chaos.json holds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import chaos


def test_the_chaos_table_is_generated_from_chaos_json() -> None:
    assert chaos.main(["--check"]) == 0, "run: python -m benchmarks.chaos --docs"


def test_every_recorded_scenario_is_a_row_with_its_figures() -> None:
    report = chaos.load()
    block = chaos.RELIABILITY.read_text().split(chaos.BEGIN, 1)[1].split(chaos.END, 1)[0]
    for row in report["scenarios"]:
        line = next(x for x in block.splitlines() if x.startswith(f"| {row['scenario']} |"))
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        assert cells[2:6] == [
            str(row[k]) for k in ("sends_ok", "sends_failed", "sends_unknown", "lost")
        ]


def test_the_check_sees_a_stale_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    results = tmp_path / "chaos.json"
    row = {"scenario": "x", "broker": "5.3.3", "sends_ok": 1, "sends_failed": 0,
           "sends_unknown": 0, "lost": 0, "duplicated": 0}  # fmt: skip
    results.write_text(json.dumps({"scenarios": [row]}))
    doc = tmp_path / "reliability.md"
    doc.write_text(f"intro\n{chaos.BEGIN}\n{chaos.END}\nend\n")
    monkeypatch.setattr(chaos, "CHAOS_JSON", results)
    monkeypatch.setattr(chaos, "RELIABILITY", doc)
    assert chaos.main(["--check"]) == 1
    assert chaos.main(["--docs"]) == 0
    assert "| x | 5.3.3 | 1 | 0 | 0 | 0 | 0 | - |" in doc.read_text()
    assert doc.read_text().endswith(f"{chaos.END}\nend\n")
    assert chaos.main(["--check"]) == 0
