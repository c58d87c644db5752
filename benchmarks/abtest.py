"""Our pipelined path (b) against the null broker: the code before a change against after it.

    git archive main rocketmq_actors | tar -x -C BASE
    python -m benchmarks.abtest --base BASE --change "what changed" [--windows 6] [--seconds 3]
        [--nowait] [--autobatch] [--pin]

``BASE`` holds the ``rocketmq_actors`` package to compare with (the code before the change);
this tree's is the code after it. One ``NullBroker.java`` serves both. Each window is a fresh
process running ``benchmarks.sendprofile``'s worker (a warm-up, then ``--seconds`` of 1 KiB
sends with ``--concurrency`` in flight: ``await send`` from that many tasks, or with
``--nowait`` ``submit`` from one task with that many admitted; with ``--autobatch`` either
of them auto-batched, paths e_autobatch_1k and e_autobatch_nowait_1k), the sides taking turns
(before-after, after-before, ...) so that the machine's phases fall on both, after a window
that neither side counts (the null broker's warm-up); with ``--pin``
the null broker runs on a core of its own and the windows on another (``benchmarks.nullbroker
--pin``: fewer swings from the broker's threads taking the client's core). Per side:
messages over the summed window time and the process's CPU per message (every thread). The
pooled figures and every window are appended to the ``changes`` entry of
``benchmarks/results/abtest.json``, with the load average when the run began and ended and a
calibration (``benchmarks.common.calibration_us``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from .common import RESULTS, TREE, alternating, calibration_us, last_json, run_main
from .nullbroker import null_broker, pin_layout


def window(
    base: Path | None, addr: str, seconds: float, concurrency: int, *, flags: tuple[str, ...] = ()
) -> dict[str, Any]:
    """One window in a fresh process: ``base``'s package (None: this tree's)."""
    env = dict(os.environ)
    # -m puts the working directory first on sys.path: run the "before" side from BASE so
    # its package shadows this tree's, which still provides ``benchmarks``
    env["PYTHONPATH"] = os.pathsep.join([str(base), str(TREE)] if base else [str(TREE)])
    try:
        done = subprocess.run(
            [sys.executable, "-m", "benchmarks.sendprofile", "--worker", addr,
             "--seconds", str(seconds), "--concurrency", str(concurrency), *flags],
            capture_output=True, text=True, check=False, timeout=seconds + 120, env=env,
            cwd=base or TREE,
        )  # fmt: skip
    except subprocess.TimeoutExpired as exc:
        raise SystemExit(f"a window of {base or TREE} did not end: {exc}") from None
    if done.returncode != 0:
        raise SystemExit(f"a window of {base or TREE} failed: {done.stderr.strip()[-1500:]}")
    return last_json(done.stdout, "abtest")


def warm_up(addr: str, seconds: float, concurrency: int, *, flags: tuple[str, ...] = ()) -> None:
    """One window of this tree's package, not recorded, before the sides take turns: a fresh
    null broker's JIT warms up in its first window (slower), which would otherwise always fall
    on the side that goes first."""
    window(None, addr, seconds, concurrency, flags=flags)


def pooled(windows: list[dict[str, Any]], seconds: float) -> dict[str, Any]:
    messages = sum(w["messages"] for w in windows)
    cpu = sum(w["client_cpu_us_per_msg"] * w["messages"] for w in windows)
    return {
        "msgs_per_s": round(messages / (seconds * len(windows))),
        "client_cpu_us_per_msg": round(cpu / messages, 2) if messages else None,
        "windows": windows,
    }


def _path(nowait: bool, autobatch: bool) -> str:
    """The name of the path measured (as ``benchmarks.nullbroker`` names it)."""
    if autobatch:
        return "e_autobatch_nowait_1k" if nowait else "e_autobatch_1k"
    return "b_pipelined_nowait_1k" if nowait else "b_pipelined_1k"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--base", type=Path, required=True, help="the package before the change")
    parser.add_argument("--change", required=True, help="what the change is, for the results")
    parser.add_argument("--windows", type=int, default=6, help="windows per side")
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--nowait", action="store_true", help="path b_pipelined_nowait_1k (submit)")
    parser.add_argument("--autobatch", action="store_true", help="auto-batched (paths e_...)")
    parser.add_argument("--pin", action="store_true", help="the null broker on a core of its own")
    parser.add_argument("--out", type=Path, default=RESULTS / "abtest.json")
    args = parser.parse_args(argv)
    base = args.base.resolve()
    if not (base / "rocketmq_actors" / "__init__.py").exists():
        parser.error(f"--base: {base} holds no rocketmq_actors package")
    sides: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
    flags = tuple(f"--{name}" for name in ("nowait", "autobatch") if getattr(args, name))
    load_began, calibration = round(os.getloadavg()[0], 2), calibration_us()
    with null_broker(pin_layout() if args.pin else None) as broker:
        warm_up(broker.addr, args.seconds, args.concurrency, flags=flags)
        for side in alternating(args.windows, "before", "after"):
            tree = base if side == "before" else TREE
            got = window(tree if side == "before" else None, broker.addr, args.seconds,
                         args.concurrency, flags=flags)  # fmt: skip
            if Path(got.pop("package")).resolve() != tree.resolve():  # (PYTHONPATH shadowing)
                raise SystemExit(f"the {side} window did not run the package of {tree}")
            sides[side].append(got)
    results = json.loads(args.out.read_text()) if args.out.exists() else {}
    results.setdefault("changes", []).append({
        "change": args.change,
        "path": f"{_path(args.nowait, args.autobatch)} (ours only"
        f"{', pinned' if args.pin else ''})",
        "taken_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "window_seconds": args.seconds,
        "load_1m": [load_began, round(os.getloadavg()[0], 2)],
        "calibration_us": calibration,
        **{side: pooled(windows, args.seconds) for side, windows in sides.items()},
    })  # fmt: skip
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(run_main(main))
