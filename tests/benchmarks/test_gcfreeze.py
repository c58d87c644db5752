"""``benchmarks.gcfreeze``: a window with ``--gc-freeze`` froze the start-up's objects and one
without did not (so the two sides measure what they say), and the page shows every path and
side of the results file."""

from __future__ import annotations

import pytest

from benchmarks.abtest import window
from benchmarks.docs import gcfreeze_section
from benchmarks.docs_null import load
from benchmarks.gcfreeze import SIDES, summary
from benchmarks.nullbroker import NullBroker


@pytest.mark.integration
@pytest.mark.once  # (Java for the null broker's jars, no session cluster)
def test_a_frozen_window_froze_the_start_ups_objects_and_a_default_one_did_not() -> None:
    with NullBroker(queues=2) as broker:
        flags = ("--autobatch", "--nowait")
        default = window(None, broker.addr, 0.3, 16, flags=flags)
        frozen = window(None, broker.addr, 0.3, 16, flags=(*flags, "--gc-freeze"))
    assert default["frozen_objects"] == 0 < frozen["frozen_objects"]
    for got in (default, frozen):
        assert got["messages"] > 0 and 0 < got["p50_ms"] <= got["p99_ms"]
        assert len(got["gc_collections"]) == 3


def test_a_side_pools_its_windows() -> None:
    windows = [
        {"messages": 100, "client_cpu_us_per_msg": 4.0, "p99_ms": 9.0, "gc_collections": [5, 1, 0]},
        {"messages": 300, "client_cpu_us_per_msg": 2.0, "p99_ms": 1.0, "gc_collections": [7, 0, 1]},
        {"messages": 200, "client_cpu_us_per_msg": 3.0, "p99_ms": 2.0, "gc_collections": [1, 1, 1]},
    ]
    pooled = summary(windows, 2.0)
    assert pooled["msgs_per_s"] == 100  # (600 messages over 3 windows of 2 s)
    assert pooled["client_cpu_us_per_msg"] == round((400 + 600 + 600) / 600, 2)
    assert pooled["p99_ms_median"] == 2.0 and pooled["gc_collections"] == [13, 2, 2]


def test_the_page_shows_every_path_and_side_of_gcfreeze_json() -> None:
    figures = load("gcfreeze")
    text = "\n".join(gcfreeze_section(figures))
    for path, sides in figures["paths"].items():
        assert set(sides) == set(SIDES)
        for pooled in sides.values():
            assert f"| {path} |" in text and f"| {pooled['p99_ms_median']} |" in text
