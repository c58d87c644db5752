"""What ``gc.freeze()`` after start-up does to our send paths, many sends in flight.

    python -m benchmarks.gcfreeze [--windows 4] [--seconds 3] [--concurrency 256]

At hundreds of sends in flight, Python's garbage collector runs a young collection every few
hundred messages and, now and then, a full one, whose time grows with every object the process
tracks, the modules and classes loaded at start-up included. ``gc.freeze()`` (Python 3.7+)
moves every object tracked so far into a generation no collection visits. A library cannot
call it for the application; docs/operations.md says when an application may. This program
measures both ways on the same code: each window a fresh process running
``benchmarks.sendprofile``'s worker (2 s of warm-up, then ``--seconds`` of 1 KiB sends) against
one null broker (``benchmarks.nullbroker``), with and without ``--gc-freeze`` taking turns
(ABBA), on the paths where the collector ran most: auto-batched sends, awaited and through
``submit`` with a callback each (e_autobatch_1k, e_autobatch_nowait_1k), and pipelined sends
(b_pipelined_1k). Per window: messages/s, the process's CPU per message, p50/p99 latency and the
collections per generation; the load average and a calibration are written beside the run, in
``benchmarks/results/gcfreeze.json``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path
from typing import Any

from .abtest import pooled, warm_up, window
from .common import RESULTS, alternating, calibration_us, run_main, write_results
from .nullbroker import null_broker

#: path name (as benchmarks.nullbroker names it) -> the worker's flags
PATHS = {
    "e_autobatch_1k": ("--autobatch",),
    "e_autobatch_nowait_1k": ("--autobatch", "--nowait"),
    "b_pipelined_1k": (),
}
SIDES = ("default", "frozen")


def summary(windows: list[dict[str, Any]], seconds: float) -> dict[str, Any]:
    """A side's pooled rate and CPU (:func:`.abtest.pooled`), with the median of its windows'
    p99 latencies and its collections per generation in all."""
    figures = pooled(windows, seconds)
    figures["p99_ms_median"] = round(statistics.median(w["p99_ms"] for w in windows), 3)
    per_window = [w["gc_collections"] for w in windows]
    figures["gc_collections"] = [sum(gens) for gens in zip(*per_window, strict=True)]
    return figures


def run(
    addr: str, paths: list[str], windows: int, seconds: float, concurrency: int
) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    for path in paths:
        flags = PATHS[path]
        warm_up(addr, seconds, concurrency, flags=flags)
        sides: dict[str, list[dict[str, Any]]] = {side: [] for side in SIDES}
        for side in alternating(windows, *SIDES):
            extra = ("--gc-freeze",) if side == "frozen" else ()
            got = window(None, addr, seconds, concurrency, flags=(*flags, *extra))
            got.pop("package")
            if (got["frozen_objects"] > 0) != (side == "frozen"):
                raise SystemExit(f"a {side} window of {path} froze {got['frozen_objects']}")
            sides[side].append(got)
        figures[path] = {side: summary(got, seconds) for side, got in sides.items()}
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--windows", type=int, default=4, help="windows per side and path")
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--paths", nargs="+", choices=sorted(PATHS), default=list(PATHS))
    parser.add_argument("--out", type=Path, default=RESULTS / "gcfreeze.json")
    args = parser.parse_args(argv)
    load_began, calibration = round(os.getloadavg()[0], 2), calibration_us()
    with null_broker(None) as broker:
        paths = run(broker.addr, args.paths, args.windows, args.seconds, args.concurrency)
    write_results(args.out, {
        "taken_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "settings": {"windows": args.windows, "window_seconds": args.seconds,
                     "concurrency": args.concurrency, "cores": os.cpu_count()},
        "load_1m": [load_began, round(os.getloadavg()[0], 2)],
        "calibration_us": calibration,  # (before; write_results adds one after)
        "paths": paths,
    })  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(run_main(main))
