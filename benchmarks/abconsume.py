"""Our push-consume drain on a real broker: the code before a change against after it, alone
and beside busy processes (issue 46: what holds a drain back under contention).

    git archive <before> rocketmq_actors | tar -x -C BASE
    python -m benchmarks.abconsume --base BASE --change "what changed" [--rounds 2]
        [--messages 400000] [--busy 2]

Starts a local RocketMQ (the launcher's 5.3.3, ``jit="full"``) and fills a topic of 8 queues
with ``--messages`` 1 KiB messages (``benchmarks.consumer``'s prefill). Then each drain is a
fresh process running ``benchmarks.consumer``'s push drain (a fresh group from the first
offset, a handler that only counts) with ``BASE``'s package (before) or this tree's (after),
the sides taking turns (before-after, after-before, ...) ``--rounds`` times alone and
``--rounds`` times beside ``--busy`` busy loops (``benchmarks.contention``'s). Per drain:
messages a second from the first message to the last, the drain process's CPU per message and
the cores it took over that time, and the load average before it. The broker runs beside both
sides and costs more CPU than either: these figures compare our code with our code, never with
the Java client (``benchmarks.nullbroker`` does that). Each run is appended to
``benchmarks/results/abconsume.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio

from .common import RESULTS, TREE, alternating, calibration_us, last_json, run_main
from .consumer import prefill, push_drain
from .contention import BusyLoops


def _worker(namesrv: str, topic: str, messages: int) -> None:
    drain = anyio.run(push_drain, namesrv, topic, messages)
    active = drain["seconds"] - drain["first_message_s"]
    import rocketmq_actors

    sys.stdout.write(json.dumps({
        "msgs_per_s": drain["msgs_per_s_from_first"],
        "cpu_us_per_msg": round(drain["cpu_s_from_first"] / drain["messages"] * 1e6, 2),
        "cores": round(drain["cpu_s_from_first"] / active, 2) if active > 0 else None,
        "package": str(Path(rocketmq_actors.__file__).resolve().parents[1]),
    }) + "\n")  # fmt: skip


def drain(base: Path | None, namesrv: str, topic: str, messages: int) -> dict[str, Any]:
    """One drain in a fresh process: ``base``'s package (None: this tree's)."""
    tree = base or TREE
    # -m puts the working directory first on sys.path: run the "before" side from BASE so its
    # package shadows this tree's, which still provides ``benchmarks``
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(dict.fromkeys([str(tree), str(TREE)])))
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.abconsume", "--worker", namesrv, topic,
         str(messages)],
        capture_output=True, text=True, check=False, timeout=900, env=env, cwd=tree,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"a drain of {tree} failed: {done.stderr.strip()[-1500:]}")
    got = last_json(done.stdout, "abconsume")
    if Path(got.pop("package")) != tree.resolve():  # (PYTHONPATH shadowing)
        raise SystemExit(f"a drain did not run the package of {tree}")
    return got


def summary(drains: list[dict[str, Any]]) -> dict[str, Any]:
    """The median of each side's drains, alone and beside the busy loops."""
    out: dict[str, Any] = {}
    for busy in sorted({d["busy_loops"] for d in drains}):
        condition = "alone" if not busy else f"beside_{busy}_busy_loops"
        out[condition] = {}
        for side in ("before", "after"):
            mine = [d for d in drains if d["side"] == side and d["busy_loops"] == busy]
            out[condition][side] = {
                key: statistics.median(d[key] for d in mine)
                for key in ("msgs_per_s", "cpu_us_per_msg", "cores")
            }
    return out


def measure(args: argparse.Namespace, base: Path) -> dict[str, Any]:
    from rocketmq_actors.testing.cluster import ClusterSpec, LocalCluster

    drains: list[dict[str, Any]] = []
    with LocalCluster(ClusterSpec(jit="full")) as cluster:
        namesrv = cluster.namesrv_addr
        topic = f"bench_abconsume_{time.time_ns()}"
        anyio.run(prefill, namesrv, topic, args.messages)
        drain(None, namesrv, topic, args.messages)  # (not counted: the broker's warm-up)
        for busy in (0, args.busy):
            with BusyLoops(busy):
                for side in alternating(args.rounds, "before", "after"):
                    load = round(os.getloadavg()[0], 2)
                    got = drain(base if side == "before" else None, namesrv, topic,
                                args.messages)  # fmt: skip
                    drains.append({"side": side, "busy_loops": busy, "load_before": load,
                                   **got})  # fmt: skip
    return {"summary": summary(drains), "drains": drains}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--base", type=Path, help="the package before the change")
    parser.add_argument("--change", help="what the change is, for the results")
    parser.add_argument("--rounds", type=int, default=2, help="drains per side and condition")
    parser.add_argument("--messages", type=int, default=400_000)
    parser.add_argument("--busy", type=int, default=2, help="busy loops beside a drain")
    parser.add_argument("--worker", nargs=3, metavar=("NAMESRV", "TOPIC", "MESSAGES"),
                        help=argparse.SUPPRESS)  # fmt: skip
    parser.add_argument("--out", type=Path, default=RESULTS / "abconsume.json")
    args = parser.parse_args(argv)
    if args.worker:
        namesrv, topic, messages = args.worker
        _worker(namesrv, topic, int(messages))
        return 0
    if args.base is None or args.change is None:
        parser.error("--base and --change are required")
    base = args.base.resolve()
    if not (base / "rocketmq_actors" / "__init__.py").exists():
        parser.error(f"--base: {base} holds no rocketmq_actors package")
    figures = measure(args, base)
    results = json.loads(args.out.read_text()) if args.out.exists() else {"changes": []}
    results["changes"].append({
        "change": args.change,
        "taken_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "calibration_sum_range_1000_us": calibration_us(),
        "cores": os.cpu_count(),
        "settings": {"messages": args.messages, "rounds": args.rounds, "busy": args.busy,
                     "queues": 8, "broker": "RocketMQ 5.3.3 (launcher, jit=full)"},
        **figures,
    })  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    sys.stdout.write(json.dumps(figures["summary"]) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(run_main(main))
