"""A path's figures as ``benchmarks.rotation.path_figures`` writes them, for tests of what is
read from a run."""

from __future__ import annotations

from typing import Any


def path_figures(ours: int, java: int, cpu_ours: float, cpu_java: float) -> dict[str, Any]:
    """Throughputs (msgs/s) and CPU per message of both sides, with the rounded ratios."""
    return {
        "ours": ours, "java": java, "ratio": round(ours / java, 2),
        "cpu_us_per_msg_ours": cpu_ours, "cpu_us_per_msg_java": cpu_java,
        "cpu_ratio_java_over_ours": round(cpu_java / cpu_ours, 2),
    }  # fmt: skip
