"""The chaos suite's report and its two speeds.

* ``chaos_report`` (fixture): a scenario records its figures (send outcomes, lost,
  duplicated, order violations, time to recover). With ``ROCKETMQ_ACTORS_CHAOS_REPORT=path``
  (``make chaos`` sets it) the session writes them to that JSON file at its end, merged by
  scenario name into what the file holds (a scenario that did not run keeps its last row);
  without it nothing is written.
* ``@pytest.mark.chaos_full``: a scenario that needs a cluster of its own and a minute or
  more (controller failover, network namespaces). It runs only when
  ``ROCKETMQ_ACTORS_CHAOS=full`` (``make chaos``); ``make test`` keeps the fast subset.
* ``topology`` (module): two masters, broker-b in a network namespace
  (:mod:`tests.chaos.netns_cluster`), one per module of the netns scenarios.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rocketmq_actors.testing.faults import OrderResult, QueueResult

from .netns_cluster import Topology, netns_topology

REPORT_ENV = "ROCKETMQ_ACTORS_CHAOS_REPORT"
FULL_ENV = "ROCKETMQ_ACTORS_CHAOS"

_ROWS: dict[str, dict[str, Any]] = {}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"chaos_full: a long chaos scenario, run only with {FULL_ENV}=full (make chaos)"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get(FULL_ENV) == "full":
        return
    skip = pytest.mark.skip(reason=f"a long chaos scenario: runs in `make chaos` ({FULL_ENV}=full)")
    for item in items:
        if "chaos_full" in item.keywords:
            item.add_marker(skip)


class ChaosReport:
    """Rows of the chaos report, one per scenario."""

    def __init__(self, version: str) -> None:
        self.version = version

    def record(
        self,
        scenario: str,
        result: QueueResult,
        *,
        order: OrderResult | None = None,
        recover_s: float | None = None,
        outage_s: float | None = None,
        throughput: float | None = None,
        note: str = "",
    ) -> dict[str, Any]:
        """``throughput``: messages a second while the fault lasted (acknowledged sends, or
        first deliveries for a consumer), where the scenario measures it."""
        row: dict[str, Any] = {
            "scenario": scenario,
            "broker": self.version,
            "sends_ok": result.sent["ok"],
            "sends_failed": result.sent["failed"],
            "sends_unknown": result.sent["unknown"],
            "lost": len(result.lost),
            "duplicated": result.duplicates,
            "order_violations": None if order is None else len(order.violations),
            "outage_s": None if outage_s is None else round(outage_s, 2),
            "recover_s": None if recover_s is None else round(recover_s, 2),
            "throughput_per_s": None if throughput is None else round(throughput),
            "note": note,
        }
        _ROWS[scenario] = row
        return row


@pytest.fixture
def chaos_report(request: pytest.FixtureRequest) -> Iterator[ChaosReport]:
    yield ChaosReport(request.config.getoption("--rocketmq-version"))


@pytest.fixture(scope="module")
def topology(request: pytest.FixtureRequest) -> Iterator[Topology]:
    with netns_topology(request.config.getoption("--rocketmq-version")) as topo:
        yield topo


def merge_rows(path: Path, rows: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The report at ``path`` with ``rows`` replacing the rows of the same scenario."""
    try:
        old = json.loads(path.read_text())
    except (OSError, ValueError):
        old = {"scenarios": []}
    merged = {row["scenario"]: row for row in old.get("scenarios", [])}
    merged.update(rows)
    return {"scenarios": [merged[name] for name in sorted(merged)]}


def pytest_sessionfinish(session: pytest.Session) -> None:
    target = os.environ.get(REPORT_ENV)
    if not target or not _ROWS:
        return
    path = Path(target)
    report = merge_rows(path, _ROWS)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n")
