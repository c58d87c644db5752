"""docs/performance.md and the README's performance table are what benchmarks/results gives."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from benchmarks import docs
from benchmarks.common import RESULTS
from benchmarks.docs_compiled import compiled_section


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


def _compiled(pure_cpu: float, compiled_cpu: float, failed: int = 0) -> dict[str, object]:
    codec = {"encode_send_v2_us": 1.0}
    passing = {"passed": 5, "failed": 0, "failed_by_file": {}, "deselected": 2}

    def path(pure: float, built: float) -> dict[str, object]:
        return {
            "pure": {"msgs_per_s": 1, "client_cpu_us_per_msg": pure},
            "compiled": {"msgs_per_s": 1, "client_cpu_us_per_msg": built},
        }

    return {
        "settings": {"rounds": 1},
        "modules": {"protocol/framing": "ok", "protocol/headers": "mypyc refuses it: a | b"},
        "codec": {"pure": [codec], "compiled": [codec]},
        "scopes": {
            "protocol": {
                "modules": ["protocol/framing"],
                "b_pipelined_1k": path(10.0, 9.9),
                "b_pipelined_nowait_1k": path(10.0, 9.0),
                "tests": passing,
            },
            "send_path": {
                "modules": ["protocol/framing"],
                "b_pipelined_1k": path(pure_cpu, compiled_cpu),
                "b_pipelined_nowait_1k": path(10.0, 9.9),
                "tests": {
                    "passed": 5,
                    "failed": failed,
                    "failed_by_file": {"tests/runtime/test_wire.py": failed} if failed else {},
                    "deselected": 2,
                },
            },
        },
    }


def test_the_mypyc_verdict_follows_the_measured_saving_on_b() -> None:
    kept = "\n".join(compiled_section(_compiled(10.0, 9.5)))
    # judged on (b), await send: not on send_nowait's larger saving in the protocol scope
    assert "protocol saved 1.0% on (b): not met, not shipped" in kept
    assert "send_path saved 5.0% on (b): not met, not shipped" in kept
    assert "| protocol | b_pipelined_nowait_1k | 1 / 1 | 10.0 / 9.0 | 10.0% |" in kept
    assert "| `protocol/headers` | mypyc refuses it: a / b |" in kept  # a table cell, not two
    shipped = "\n".join(compiled_section(_compiled(10.0, 8.5)))
    assert "send_path saved 15.0% on (b) and passes the tests: met, worth shipping" in shipped
    # ... and not while a test fails compiled, whatever it saves
    failing = "\n".join(compiled_section(_compiled(10.0, 8.5, failed=3)))
    assert "send_path saved 15.0% on (b), 3 tests fail: not met, not shipped" in failing
    assert "| send_path | 1 | 5 / 3 (2) | `runtime/test_wire.py` 3 |" in failing


def test_every_figure_of_the_readme_null_table_is_in_nullbroker_json() -> None:
    null = json.loads((RESULTS / "nullbroker.json").read_text())
    block = docs.README.read_text().split(docs.BEGIN, 1)[1].split(docs.END, 1)[0]
    for name, p in null["paths"].items():
        assert (
            f"| {name} | {p['ours']} / {p['java']} | {p['ratio']} | {p['cpu_us_per_msg_ours']} / "
            f"{p['cpu_us_per_msg_java']} |"
        ) in block
