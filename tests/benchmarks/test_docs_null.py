"""The README's words on which client leads come from the measured figures of the run."""

from __future__ import annotations

from typing import Any

from benchmarks.docs_null import _standing


def _path(ours: int, java: int, cpu_ours: float, cpu_java: float) -> dict[str, Any]:
    return {
        "ours": ours, "java": java, "ratio": round(ours / java, 2),
        "cpu_us_per_msg_ours": cpu_ours, "cpu_us_per_msg_java": cpu_java,
        "cpu_ratio_java_over_ours": round(cpu_java / cpu_ours, 2),
    }  # fmt: skip


def test_a_path_leads_only_where_its_figures_do() -> None:
    run = {"paths": {
        "a_sync_one_in_flight": _path(12_538, 9_886, 47.27, 84.46),
        "b_pipelined_1k": _path(143_000, 143_346, 10.36, 10.32),  # both ratios print 1.0
        "c_batch_16x1k": _path(743_000, 742_757, 1.71, 1.96),  # ratio 1.0, ours ahead
    }}  # fmt: skip
    words = _standing(run)
    assert words.startswith(
        "Ours has the higher throughput on `a_sync_one_in_flight`, `c_batch_16x1k`, and costs "
        "less CPU per message on `a_sync_one_in_flight`, `c_batch_16x1k`;"
    )


def test_no_path_ahead_says_none() -> None:
    words = _standing({"paths": {"d_consume": _path(171_527, 515_464, 5.82, 3.31)}})
    assert "throughput on none, and costs less CPU per message on none;" in words
