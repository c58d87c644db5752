"""benchmarks.contention: each condition's means per client, and the section of
docs/performance.md drawn from them."""

from __future__ import annotations

from typing import Any

from benchmarks import contention, docs


def _drain(side: str, busy: int, rate: int, cpu: float, cores: float) -> dict[str, Any]:
    return {
        "side": side, "phase": "measured", "busy_loops": busy, "busy_loops_cores": 1.5 * busy,
        "load_before": 1.0 + busy, "calibration_us": 12.0, "messages": 400_000,
        "msgs_per_s": rate, "cpu_us_per_msg": cpu, "cores": cores,
        "null_broker_cpu_us_per_msg": 0.5,
    }  # fmt: skip


DRAINS = [
    {"side": "java", "phase": "warm-up", "msgs_per_s": 1, "cpu_us_per_msg": 99.0, "cores": 2.0},
    _drain("ours", 0, 80_000, 12.0, 1.0), _drain("ours", 2, 40_000, 14.0, 0.5),
    _drain("java", 0, 300_000, 5.0, 1.5), _drain("java", 2, 200_000, 4.0, 0.8),
    _drain("java", 0, 400_000, 4.0, 1.7), _drain("java", 2, 180_000, 4.4, 0.9),
    _drain("ours", 0, 90_000, 11.0, 1.0), _drain("ours", 2, 50_000, 13.0, 0.6),
]  # fmt: skip


def test_the_summary_is_each_conditions_measured_means_and_their_ratio() -> None:
    summary = contention.summary(DRAINS, 2)
    alone, busy = summary["alone"], summary["beside_2_busy_loops"]
    assert alone["ours"]["msgs_per_s"] == 85_000 and alone["java"]["msgs_per_s"] == 350_000
    assert alone["throughput_ratio_ours_over_java"] == round(85_000 / 350_000, 2)
    assert busy["ours"]["cores"] == 0.55 and busy["java"]["cpu_us_per_msg"] == 4.2  # (no warm-up)
    assert busy["throughput_ratio_ours_over_java"] == round(45_000 / 190_000, 2)


def test_the_section_shows_every_condition_from_the_file_only() -> None:
    figures = {
        "calibration_sum_range_1000_us": 14.3, "drains": DRAINS,
        "summary": contention.summary(DRAINS, 2),
        "settings": {"messages_per_drain": 400_000, "rounds": 2, "warmup": 30.0, "cores": 2},
    }  # fmt: skip
    text = "\n".join(docs.contention_section(figures))
    assert "| alone | 85,000 | 11.5 | 1.0 | 350,000 | 4.5 | 1.6 | 0.5 | 0.24 |" in text
    assert (
        "| beside 2 busy loops | 45,000 | 13.5 | 0.55 | 190,000 | 4.2 | 0.85 | 0.5 | 0.24 |" in text
    )
    assert "load average (1 min) before the drains 1.0 to 3.0" in text
