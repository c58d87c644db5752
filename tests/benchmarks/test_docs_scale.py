"""docs/performance.md's scale section: ours beside the Java client's figures, row by row."""

from __future__ import annotations

from typing import Any

from benchmarks import docs
from benchmarks.docs_null import load


def _figures() -> dict[str, Any]:
    requests = {"PULL_MESSAGE": 3.3, "HEART_BEAT": 0.1}
    return {
        "python": "3.11.7", "machine": "x86_64", "calibration_sum_range_1000_us": 18.0,
        "json_backend": "orjson", "server": "5.5.0", "idle_s": 20.0,
        "load_average_before": [1.5, 1.0, 1.0], "load_average_after": [0.5, 1.0, 1.0],
        "queues": {
            "64": {
                "brokers": 2, "load_1m": 0.25, "start_s": 0.4, "sample_s": 0.12, "stop_s": 0.17,
                "idle_cpu_per_s": 0.0015, "idle_requests_per_s": requests, "rss_mb": 39.7,
                "tasks": 177, "tasks_per_queue": 2.77,
                "java": {
                    "load_1m": 0.5, "start_s": 2.25, "sample_s": 0.82, "stop_s": 0.16,
                    "idle_cpu_per_s": 0.0167, "idle_requests_per_s": {"PULL_MESSAGE": 4.2},
                    "rss_mb": 124.1, "threads": 60, "os_threads": 74,
                },
            },
            "1024": {"start_s": 0.82, "tasks": 2097, "java": {"error": "owned 3 of 1024"}},
        },
        "producers": {
            "shared": {
                "1": {"instances": 1, "rss_before_mb": 37.0, "rss_mb": 37.6, "tasks": 24},
                "100": {
                    "instances": 1, "rss_before_mb": 36.9, "rss_mb": 45.1, "tasks": 915,
                    "java": {"instances": 1, "rss_before_mb": 50.0, "rss_mb": 117.7,
                             "threads": 43, "os_threads": 57},
                },
            },
        },
        "topics": {"1000": {"instances": 1, "rss_mb": 42.4, "java": {"rss_mb": 120.5}}},
    }  # fmt: skip


def test_each_cell_is_ours_beside_javas() -> None:
    section = "\n".join(docs.scale_section(_figures()))
    assert (
        "| 64 | 0.4 / 2.25 | 0.12 / 0.82 | 0.17 / 0.16 | 0.0015 / 0.0167 | 39.7 / 124.1 "
        "| 177 / 60 (74) | 0.25 / 0.5 |"
    ) in section
    assert "| 100 producers, one client instance | 1 / 1 | 36.9 / 50.0 | 45.1 / 117.7 |" in section
    assert "| 1 producer, one client instance | 1 / - | 37.0 / - | 37.6 / - |" in section
    assert "| 1 producer, 1000 topics | 1 / - | - / - | 42.4 / 120.5 |" in section
    assert "| 64 queues | `PULL_MESSAGE` 3.3, `HEART_BEAT` 0.1 | `PULL_MESSAGE` 4.2 |" in section
    assert "load average (1 min) 1.50 before the run, 0.50 after" in section


def test_a_failed_java_run_says_so_and_why() -> None:
    section = "\n".join(docs.scale_section(_figures()))
    assert "| 1024 | 0.82 / failed |" in section
    assert "| 1024 queues | - | failed |" in section
    assert "- Java, 1024 queues: owned 3 of 1024" in section


def test_the_page_shows_every_java_figure_of_scale_json() -> None:
    figures = load("scale")
    section = "\n".join(docs.scale_section(figures))
    assert section in docs.performance_md()
    for n, row in figures["queues"].items():
        java = row.get("java")
        if java is not None and "error" not in java:
            assert f"| {n} | {row['start_s']} / {java['start_s']} |" in section
