"""Whether a null-broker run met its targets is read from the measured figures, not from the
rounded ratios written beside them."""

from __future__ import annotations

from benchmarks.nullbroker import mark_targets

from .figures import path_figures


def test_a_ratio_printed_as_one_is_not_a_target_met() -> None:
    paths = {
        "b_pipelined_1k": path_figures(143_000, 143_346, 10.36, 10.32),  # both ratios print 1.0
        "b_pipelined_nowait_1k": path_figures(155_400, 155_359, 9.40, 9.42),
    }
    mark_targets(paths)
    assert paths["b_pipelined_1k"]["ratio"] == 1.0
    assert paths["b_pipelined_1k"]["cpu_ratio_java_over_ours"] == 1.0
    assert paths["b_pipelined_1k"]["met"] is False  # slower, and dearer a message
    assert paths["b_pipelined_nowait_1k"]["met"] is True
    assert paths["b_pipelined_1k"]["target"] == 1.0


def test_auto_batched_cpu_is_held_to_half_javas_unbatched() -> None:
    paths = {
        "b_pipelined_1k": path_figures(96_000, 143_346, 10.36, 10.32),
        "e_autobatch_1k": path_figures(800_000, 779_720, 5.16, 1.89),  # at half Java's 10.32
        "e_autobatch_nowait_1k": path_figures(800_000, 752_716, 5.17, 1.95),  # over it
    }
    mark_targets(paths)
    assert paths["e_autobatch_1k"]["cpu_target_us_per_msg"] == 5.16
    assert paths["e_autobatch_1k"]["met"] is True
    assert paths["e_autobatch_nowait_1k"]["met"] is False
    slower = {**paths, "e_autobatch_1k": path_figures(779_000, 779_720, 4.0, 1.89)}
    mark_targets(slower)
    assert slower["e_autobatch_1k"]["met"] is False  # (cheap enough, not fast enough)
