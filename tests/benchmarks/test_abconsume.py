"""benchmarks.abconsume: each side's median drain, alone and beside the busy loops."""

from __future__ import annotations

from typing import Any

from benchmarks import abconsume


def _drain(side: str, busy: int, rate: int, cpu: float, cores: float) -> dict[str, Any]:
    return {"side": side, "busy_loops": busy, "load_before": 1.0, "msgs_per_s": rate,
            "cpu_us_per_msg": cpu, "cores": cores}  # fmt: skip


def test_the_summary_is_each_sides_median_per_condition() -> None:
    drains = [
        _drain("before", 0, 100, 8.0, 0.9), _drain("after", 0, 150, 6.0, 1.0),
        _drain("after", 0, 130, 6.5, 0.9), _drain("before", 0, 120, 7.0, 1.0),
        _drain("before", 0, 90, 9.0, 0.8), _drain("after", 0, 140, 6.2, 0.95),
        _drain("before", 2, 50, 9.5, 0.5), _drain("after", 2, 70, 7.0, 0.6),
    ]  # fmt: skip
    summary = abconsume.summary(drains)
    assert summary["alone"]["before"] == {"msgs_per_s": 100, "cpu_us_per_msg": 8.0, "cores": 0.9}
    assert summary["alone"]["after"] == {"msgs_per_s": 140, "cpu_us_per_msg": 6.2, "cores": 0.95}
    assert summary["beside_2_busy_loops"]["after"]["msgs_per_s"] == 70
    assert set(summary) == {"alone", "beside_2_busy_loops"}
