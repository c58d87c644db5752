"""Where our pipelined send path spends its CPU, against the null broker (issue 28).

    python -m benchmarks.sendprofile --py-spy /path/to/py-spy [--seconds 10] [--rate 250]

Starts ``NullBroker.java`` (``benchmarks.nullbroker``), then runs our producer's pipelined
1 KiB path (``--concurrency`` sends in flight, as ``benchmarks.paired`` path (b)) in a child
process under the py-spy sampling profiler (``pip install py-spy`` into any virtualenv outside
the repository; it is not a dependency), by default with ``--nonblocking``: py-spy's default
pauses the process for each sample, and a paused thread stops on its way out of a system call,
so the samples piled up on whichever call the send path makes most often (the ``getpid``
under ``asyncio.get_running_loop``, or ``send``) and their shares changed from run to run. From
the samples (idle threads left out) it ranks
functions by their self share (the function itself on top of the stack) and by their inclusive
share (anywhere on the stack), and writes both into the ``profile`` entry of
``benchmarks/results/nullbroker.json``, with the sends per second of the profiled run.
"""

from __future__ import annotations

import argparse
import gc
import json
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import anyio

from .common import RESULTS, percentiles, run_main
from .nullbroker import NullBroker
from .producer import Latencies, nowait_window, window

FRAME = re.compile(r"^(?P<function>.*) \((?P<file>[^()]*?)(?::\d+)?\)$")


def _name(frame: str) -> str:
    """``module/file.py:function`` of a py-spy frame, the path cut to the package."""
    match = FRAME.match(frame.strip())
    if not match:
        return frame.strip()
    file = match["file"]
    for root in ("rocketmq_actors/", "benchmarks/", "anyio/", "asyncio/"):
        if root in file:
            file = root + file.split(root, 1)[1]
            break
    else:
        file = file.rsplit("/", 1)[-1]
    return f"{file}:{match['function']}"


def summarize(raw: str, top: int = 15) -> dict[str, Any]:
    """Self and inclusive shares of the functions in py-spy's raw (collapsed) output."""
    self_counts: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = [_name(f) for f in stack.split(";") if f]
        if not frames:
            continue
        n = int(count)
        total += n
        self_counts[frames[-1]] += n
        for name in set(frames):
            inclusive[name] += n

    def ranked(counts: Counter[str]) -> list[dict[str, Any]]:
        return [
            {"function": name, "share_pct": round(n / total * 100, 1)}
            for name, n in counts.most_common(top)
        ]

    ours = Counter({k: v for k, v in inclusive.items() if k.startswith("rocketmq_actors/")})
    return {"samples": total, "top": ranked(self_counts), "inclusive_ours": ranked(ours)}


async def _worker(  # noqa: PLR0917 - the command line's flags, in order
    addr: str,
    seconds: float,
    concurrency: int,
    nowait: bool,
    autobatch: bool = False,
    gc_freeze: bool = False,
) -> dict[str, Any]:
    from rocketmq_actors.producer import Producer, ProducerOptions
    from rocketmq_actors.protocol import framing

    async def run(producer: Producer, length: float) -> tuple[int, float, Latencies[float]]:
        if nowait:  # path b_pipelined_nowait_1k: the producer's max_pending is the window
            sent, elapsed, latencies, _ = await nowait_window(producer, topic, length)
        else:
            sent, elapsed, latencies = await window(producer, topic, concurrency, length, 1)
        return sent, elapsed, latencies

    topic = "bench_profile"
    max_pending = concurrency if nowait else 100_000
    options = ProducerOptions(max_pending=max_pending, auto_batch=autobatch)
    async with Producer(namesrv=addr, group="bench_profile", options=options) as producer:
        await run(producer, 2.0)  # warm: route, connection
        if gc_freeze:  # (what an application may do once started: benchmarks/gcfreeze.py)
            gc.collect()
            gc.freeze()
        collections = [stats["collections"] for stats in gc.get_stats()]
        cpu = time.process_time()  # this process, every thread
        sent, elapsed, latencies = await run(producer, seconds)
        cpu = time.process_time() - cpu
        after = [stats["collections"] for stats in gc.get_stats()]
        collections = [end - begin for end, begin in zip(after, collections, strict=True)]
    return {
        "messages": sent,
        "msgs_per_s": round(sent / elapsed),
        "client_cpu_us_per_msg": round(cpu / sent * 1e6, 2) if sent else None,
        **percentiles(latencies),
        # the collector's runs in the window, per generation (young to full)
        "gc_collections": collections,
        "frozen_objects": gc.get_freeze_count(),
        # where the package came from: an A/B of two trees checks it ran the one it meant
        "package": str(Path(framing.__file__).parents[2]),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--py-spy", help="the py-spy executable")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rate", type=int, default=250, help="samples per second")
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--nowait", action="store_true",
                        help="submit from one task, --concurrency admitted")  # fmt: skip
    parser.add_argument("--autobatch", action="store_true", help="auto-batching on")
    parser.add_argument("--gc-freeze", action="store_true",
                        help="gc.freeze() after the warm-up (--worker only)")  # fmt: skip
    parser.add_argument("--worker", metavar="ADDR", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=RESULTS / "nullbroker.json")
    parser.add_argument("--keep-raw", type=Path, help="also copy py-spy's raw stacks here")
    parser.add_argument("--native", action="store_true", help="py-spy --native: C frames too")
    parser.add_argument("--blocking", action="store_true",
                        help="pause the process per sample (py-spy's default)")  # fmt: skip
    args = parser.parse_args(argv)
    if args.worker:  # the profiled child
        figures = anyio.run(
            _worker, args.worker, args.seconds, args.concurrency, args.nowait, args.autobatch,
            args.gc_freeze,
        )  # fmt: skip
        sys.stdout.write(json.dumps(figures) + "\n")
        return 0
    if not args.py_spy:
        parser.error("--py-spy is needed (pip install py-spy into a scratch virtualenv)")
    with NullBroker() as broker, tempfile.TemporaryDirectory(prefix="perf-profile-") as tmp:
        raw = Path(tmp) / "raw.txt"
        done = subprocess.run(
            [args.py_spy, "record", "--rate", str(args.rate), "--format", "raw",
             *(["--native"] if args.native else []),
             *([] if args.blocking or args.native else ["--nonblocking"]),
             "--output", str(raw), "--", sys.executable, "-m", "benchmarks.sendprofile",
             "--worker", broker.addr, "--seconds", str(args.seconds),
             "--concurrency", str(args.concurrency), *(["--nowait"] if args.nowait else []),
             *(["--autobatch"] if args.autobatch else [])],
            capture_output=True, text=True, check=True, timeout=args.seconds + 120,
            cwd=Path(__file__).resolve().parents[1],
        )  # fmt: skip
        # py-spy writes its own lines too: the child's figures are the JSON line
        lines = [s for s in done.stdout.splitlines() if s.startswith("{")]
        if not lines:
            raise RuntimeError(
                f"the profiled run failed: {done.stdout[-1000:]}{done.stderr[-3000:]}"
            )
        run = json.loads(lines[-1])
        profile = summarize(raw.read_text())
        if args.keep_raw:
            args.keep_raw.write_text(raw.read_text())
    results = json.loads(args.out.read_text()) if args.out.exists() else {}
    results["profile"] = {
        "method": f"py-spy{' --native' if args.native else ''}"
        f"{'' if args.blocking or args.native else ' --nonblocking'} at {args.rate} samples/s, "
        f"{args.seconds:g} s of path (b), "
        f"{args.concurrency} in flight",
        "taken_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "profiled_run": run,
        **profile,
    }
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(run_main(main))
