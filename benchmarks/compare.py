"""Our client against the Java client, on one real cluster, in one run.

Not part of ``make bench`` and not published: it predates the rules of ``benchmarks.rotation``
(its Java side warms 10 s, its consumer is a fresh JVM per drain, and the real broker beside
both clients takes more CPU than either); ``benchmarks.nullbroker`` keeps them.

    python -m benchmarks.compare [--windows 6] [--window-seconds 3] [--messages 200000]

Starts a local RocketMQ once, then measures each path with the same message size (1 KiB),
counts and durations, for our client and the Java client (``rocketmq-client`` from the cached
server jars; ``benchmarks/java/*.java`` run in source-file mode). The build VM's speed swings
within minutes (``calibration_sum_range_1000_us`` in each results file), so the produce paths
(a)-(c) run both clients at once, taking turns in ``--windows`` short windows each
(``benchmarks.paired``), and compare the pooled figures:

(a) sync send, one in flight: p50 / p99 latency;
(b) pipelined 1 KiB sends from one process, ``--concurrency`` in flight: messages/s;
(c) batch sends of 16 x 1 KiB (``--concurrency``/16 senders): messages/s;
(d) push-consuming ``--messages`` pre-filled messages (fresh group, 20 handlers): messages/s
    from the first message handled to the last (the JVM consumer takes longer to its first
    message than ours; both start-up times and from-start rates are in the details). Each
    client drains the backlog ``--drains`` times, in turns (ours, Java, Java, ours, ...), and
    the pooled rates are compared: one drain each, one after the other, let the VM's speed
    swing decide (the ratio fell either side of 1.0 from one run to the next);
(e) codec micro-benchmarks (ours only: the Java client has no comparable isolated figure);
(f) RSS of a consumer with a 10 ms handler over the same large backlog, each in a fresh process.

Writes ``benchmarks/results/compare.json`` (every figure, and each ratio with higher = better
for us: ours/Java for throughput, Java/ours for latency and memory), ``compare.md`` (a table)
and ``compare.png`` (the ratios, for the README).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from . import codec, consumer, paired
from .common import RESULTS, alternating, last_json, on_cluster, run_main, write_results

TARGETS = {  # issue 9: the least ratio (higher = better for us) each path must reach
    "a_sync_latency_p50": 1 / 1.2,
    "b_pipelined_1k": 1.0,
    "b_pipelined_nowait_1k": 1.0,
    "c_batch_16x1k": 1.0,
    "d_consume_200k": 1.0,
}


def _ratio(ours: float, java: float) -> float:
    return round(ours / java, 2) if java else 0.0


def _python_slow_handler(namesrv: str, topic: str, seconds: float) -> dict[str, Any]:
    """Our slow-handler run in a fresh interpreter, as the Java one runs in a fresh JVM."""
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.consumer", "--namesrv", namesrv,
         "--slow-only", topic, "--slow-seconds", str(seconds)],
        capture_output=True, text=True, timeout=600, check=True,
        cwd=Path(__file__).resolve().parents[1],
    )  # fmt: skip
    return last_json(done.stdout, "benchmarks.consumer")


def drains(  # noqa: PLR0917
    namesrv: str,
    topic: str,
    messages: int,
    rounds: int,
    other: str = "java",
    drain: Callable[[str, str, int], dict[str, Any]] = consumer.java_drain,
) -> dict[str, dict[str, Any]]:
    """(d): ``rounds`` drains of ``topic`` per client (each a fresh group from the first
    offset), ours and ``other``'s (``drain(namesrv, topic, messages)``), taking turns in ABBA
    order so that neither side always goes first (the first drain after the prefill reads a
    colder page cache); the pooled figures of each side."""
    runs: dict[str, list[dict[str, Any]]] = {"ours": [], other: []}
    for side in alternating(rounds, "ours", other):
        if side == "ours":
            runs[side].append(anyio.run(consumer.push_drain, namesrv, topic, messages))
        else:
            runs[side].append(drain(namesrv, topic, messages))
    return {side: pooled_drains(each) for side, each in runs.items()}


def pooled_drains(drains: list[dict[str, Any]]) -> dict[str, Any]:
    """Messages over time from each drain's first message to its last, summed over the
    drains; the start-up times and every drain's own figures are kept."""
    messages = sum(d["messages"] for d in drains)
    active = sum(d["seconds"] - d["first_message_s"] for d in drains)
    cpu = [d.get("cpu_s_from_first") for d in drains]
    return {
        "messages": messages,
        "msgs_per_s_from_first": round(messages / active) if active > 0 else 0,
        # the client's CPU over the same spans (every thread), where each drain reports it
        "client_cpu_us_per_msg": (
            round(sum(c for c in cpu if c is not None) / messages * 1e6, 2)
            if messages and None not in cpu
            else None
        ),
        "first_message_s": [d["first_message_s"] for d in drains],
        "drains": drains,
    }


def measure(namesrv: str, args: argparse.Namespace) -> dict[str, Any]:
    stamp = int(time.time())
    produce = anyio.run(paired.paired, namesrv, args.windows, args.window_seconds,
                        args.warmup, args.concurrency, f"bench_paired_{stamp}")  # fmt: skip
    backlog = f"bench_consume_{stamp}"
    prefill_s = anyio.run(consumer.prefill, namesrv, backlog, args.messages)
    consumed = drains(namesrv, backlog, args.messages, args.drains)
    ours_consume, java_consume = consumed["ours"], consumed["java"]
    ours_slow = _python_slow_handler(namesrv, backlog, args.slow_seconds)
    java_slow = consumer.java_slow_handler(namesrv, backlog, args.slow_seconds)
    sync, pipelined, nowait, batch = (
        produce[paired.MODES[mode]] for mode in ("sync", "pipelined", "nowait", "batch")
    )

    def row(unit: str, ours: float, java: float) -> dict[str, Any]:
        return {"unit": unit, "ours": ours, "java": java}

    paths = {
        "a_sync_latency_p50": row("ms (p50, lower is better)",
                                   sync["ours"]["p50_ms"], sync["java"]["p50_ms"]),
        "a_sync_latency_p99": row("ms (p99, lower is better)",
                                   sync["ours"]["p99_ms"], sync["java"]["p99_ms"]),
        "b_pipelined_1k": row("msgs/s", pipelined["ours"]["msgs_per_s"],
                               pipelined["java"]["msgs_per_s"]),
        "b_pipelined_nowait_1k": row("msgs/s", nowait["ours"]["msgs_per_s"],
                                     nowait["java"]["msgs_per_s"]),
        "c_batch_16x1k": row("msgs/s", batch["ours"]["msgs_per_s"],
                              batch["java"]["msgs_per_s"]),
        "d_consume_200k": row("msgs/s (from the first message)",
                              ours_consume["msgs_per_s_from_first"],
                              java_consume["msgs_per_s_from_first"]),
        "f_slow_handler_rss": row("MB (max RSS, lower is better)",
                                   ours_slow["rss_max_mb"], java_slow["rss_max_mb"]),
    }  # fmt: skip
    for name, path in paths.items():
        lower_is_better = "lower is better" in path["unit"]
        ours, java = float(path["ours"]), float(path["java"])
        path["ratio"] = _ratio(java, ours) if lower_is_better else _ratio(ours, java)
        if name in TARGETS:
            path["target"] = round(TARGETS[name], 2)
            path["met"] = path["ratio"] >= TARGETS[name]
    return {
        "paths": paths,
        "detail": {
            "produce": produce,
            "prefill_seconds": round(prefill_s, 2),
            "ours_consume": ours_consume,
            "java_consume": java_consume,
            "ours_slow_handler": ours_slow,
            "java_slow_handler": java_slow,
        },
    }


def target_cell(path: dict[str, Any]) -> str:
    """A path's target and whether it was met, for a table (empty for a path without one)."""
    if "target" not in path:
        return ""
    cpu = path.get("cpu_target_us_per_msg")
    also = f", CPU ≤ {cpu} us/msg" if cpu is not None else ""
    return f"≥ {path['target']}{also} {'met' if path['met'] else '**not met**'}"


def markdown(figures: dict[str, Any]) -> str:
    lines = [
        "| path | unit | ours | Java | ratio (higher = better for us) | target |",
        "|---|---|---:|---:|---:|---|",
    ]
    for name, p in figures["paths"].items():
        lines.append(
            f"| {name} | {p['unit']} | {p['ours']} | {p['java']} | {p['ratio']} | "
            f"{target_cell(p)} |"
        )
    codec_figures = figures["codec"]
    lines += [
        "",
        f"(e) codec: encode SEND_MESSAGE_V2 {codec_figures['encode_send_v2_us']} us, "
        f"decode {codec_figures['decode_128b_msgs_per_s']:,} msgs/s (128 B bodies), "
        f"response frame {codec_figures['decode_response_frame_us']} us.",
        f"Machine calibration `sum(range(1000))`: {figures['calibration_sum_range_1000_us']} us.",
    ]
    return "\n".join(lines) + "\n"


def chart(figures: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(figures["paths"])
    ratios = [figures["paths"][n]["ratio"] for n in names]
    colors = ["tab:green" if r >= 1.0 else "tab:orange" for r in ratios]
    fig, ax = plt.subplots(figsize=(8, 3.6), dpi=110)
    bars = ax.barh(names[::-1], ratios[::-1], color=colors[::-1])
    ax.axvline(1.0, color="black", linewidth=1)
    ax.bar_label(bars, labels=[f"{r:.2f}x" for r in ratios[::-1]], padding=3)
    ax.set_xlabel("rocketmq-actors vs Java client (higher = better for us; 1.0 = parity)")
    ax.set_title("Same broker, same run, 1 KiB messages", fontsize=10)
    ax.set_xlim(0, max([*ratios, 1.0]) * 1.25)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--windows", type=int, default=6,
                        help="(a)-(c): windows per path and client, taking turns")  # fmt: skip
    parser.add_argument("--window-seconds", type=float, default=3.0, help="(a)-(c): one window")
    parser.add_argument("--warmup", type=float, default=10.0, help="(a)-(c): each client")
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--drains", type=int, default=2,
                        help="(d): drains of the backlog per client, taking turns")  # fmt: skip
    parser.add_argument("--slow-seconds", type=float, default=20.0)
    parser.add_argument("--namesrv", help="use this cluster instead of starting one")
    parser.add_argument("--out", type=Path, default=RESULTS / "compare.json")
    args = parser.parse_args(argv)
    started = time.monotonic()
    # (e) first, on a quiet machine: measured right after the cluster stopped, while the
    # broker's JVM and its mapped store were still being torn down, one run's encode figure
    # came out much slower than in the standalone codec run (benchmarks/codec.py) that followed
    codec_figures = codec.figures()
    figures = on_cluster(args.namesrv, lambda namesrv: measure(namesrv, args))
    figures["codec"] = codec_figures
    figures["settings"] = {
        "message_bytes": 1024, "windows": args.windows, "window_seconds": args.window_seconds,
        "warmup": args.warmup, "concurrency": args.concurrency, "messages": args.messages,
        "drains": args.drains,
        "slow_seconds": args.slow_seconds, "took_seconds": round(time.monotonic() - started),
    }  # fmt: skip
    written = write_results(args.out, figures)  # adds the calibration the table quotes
    args.out.with_suffix(".md").write_text(markdown(written))
    chart(written, args.out.with_suffix(".png"))
    return 0


if __name__ == "__main__":
    raise SystemExit(run_main(main))
