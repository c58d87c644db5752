"""The README's words on which client leads come from the measured figures of the run."""

from __future__ import annotations

from benchmarks.docs_null import _standing

from .figures import path_figures


def test_a_path_leads_only_where_its_figures_do() -> None:
    run = {"paths": {
        "a_sync_one_in_flight": path_figures(12_538, 9_886, 47.27, 84.46),
        "b_pipelined_1k": path_figures(143_000, 143_346, 10.36, 10.32),  # both ratios print 1.0
        "c_batch_16x1k": path_figures(743_000, 742_757, 1.71, 1.96),  # ratio 1.0, ours ahead
    }}  # fmt: skip
    words = _standing(run)
    assert words.startswith(
        "Ours has the higher throughput on `a_sync_one_in_flight`, `c_batch_16x1k`, and costs "
        "less CPU per message on `a_sync_one_in_flight`, `c_batch_16x1k`;"
    )


def test_no_path_ahead_says_none() -> None:
    words = _standing({"paths": {"d_consume": path_figures(171_527, 515_464, 5.82, 3.31)}})
    assert "throughput on none, and costs less CPU per message on none;" in words
