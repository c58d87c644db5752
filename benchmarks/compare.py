"""``make bench``: our client against the Java client, on one real cluster, in one run.

    python -m benchmarks.compare [--seconds 10] [--rounds 2] [--messages 200000] [--slow-seconds 20]

Starts a local RocketMQ once, then measures each path with the same message size (1 KiB),
counts and durations, ours first, then the Java client (``rocketmq-client`` from the cached
server jars; ``benchmarks/java/*.java`` run in source-file mode). The build VM's speed swings
about 2x within minutes (one sync p50 measured 0.56 and 0.30 ms five minutes apart), so:
paths (b) and (c) run ``--rounds`` times per client, alternating sides, and each side keeps its
best round; path (a) runs both clients at once, taking turns in ``--latency-windows`` short
windows each (``benchmarks.latency``), and compares the pooled latencies.

(a) sync send, one in flight: p50 / p99 latency;
(b) pipelined 1 KiB sends from one process, ``--concurrency`` in flight: messages/s;
(c) batch sends of 16 x 1 KiB (``--concurrency``/16 senders): messages/s;
(d) push-consuming ``--messages`` pre-filled messages (fresh group, 20 handlers): messages/s;
(e) codec micro-benchmarks (ours only: the Java client has no comparable isolated figure);
(f) RSS of a consumer with a 10 ms handler over the same large backlog, each in a fresh process.

Writes ``benchmarks/results/compare.json`` (every figure, and each ratio with higher = better
for us: ours/Java for throughput, Java/ours for latency and memory), ``compare.md`` (a table)
and ``compare.png`` (the ratios, for the README).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.producer import create_topic

from . import codec, consumer, latency, producer
from .common import RESULTS, on_cluster, run_java, write_results

TARGETS = {  # issue 9: the least ratio (higher = better for us) each path must reach
    "a_sync_latency_p50": 1 / 1.2,
    "b_pipelined_1k": 1.0,
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
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def _best_rounds(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Each produce mode's best round (fastest; for the sync mode, lowest p50), the same rule
    for both clients; every round's figures are kept under ``rounds``."""
    best: dict[str, Any] = {}
    for mode in rounds[0]:
        runs = [r[mode] for r in rounds]
        if mode == "sync_one_in_flight":
            best[mode] = min(runs, key=lambda run: run["p50_ms"])
        else:
            best[mode] = max(runs, key=lambda run: run["msgs_per_s"])
    best["rounds"] = rounds
    return best


async def _create_topic(namesrv: str, topic: str) -> None:
    async with ClientInstance(namesrv) as instance:
        await create_topic(instance, topic, queues=producer.QUEUES)


def measure(namesrv: str, args: argparse.Namespace) -> dict[str, Any]:
    stamp = int(time.time())
    py_topic, java_topic = f"bench_py_{stamp}", f"bench_java_{stamp}"
    anyio.run(_create_topic, namesrv, java_topic)  # as the Python side's: 8 queues
    ours_rounds: list[dict[str, Any]] = []
    java_rounds: list[dict[str, Any]] = []
    modes = ("pipelined", "batch")  # (a) is measured below, both clients taking turns
    for _ in range(args.rounds):  # alternate sides: a slow phase of the VM hits both
        ours_round = anyio.run(producer.bench, namesrv, args.seconds, args.concurrency,
                               args.warmup, py_topic, modes)  # fmt: skip
        ours_rounds.append(ours_round)
        java_lines = run_java("ProduceBench", namesrv, java_topic, args.seconds, args.warmup,
                              args.concurrency, ",".join(modes))  # fmt: skip
        java_rounds.append({row.pop("mode"): row for row in java_lines})
    ours_produce, java_produce = _best_rounds(ours_rounds), _best_rounds(java_rounds)
    sync_pair = anyio.run(latency.paired, namesrv, args.latency_windows, args.latency_seconds,
                          args.latency_warmup, f"bench_latency_{stamp}")  # fmt: skip
    backlog = f"bench_consume_{stamp}"
    prefill_s = anyio.run(consumer.prefill, namesrv, backlog, args.messages)
    ours_consume = anyio.run(consumer.push_drain, namesrv, backlog, args.messages)
    java_consume = consumer.java_drain(namesrv, backlog, args.messages)
    ours_slow = _python_slow_handler(namesrv, backlog, args.slow_seconds)
    java_slow = consumer.java_slow_handler(namesrv, backlog, args.slow_seconds)
    pipelined, batch = "pipelined_1k", "batch_16x1k"
    ours_sync, java_sync = sync_pair["ours"], sync_pair["java"]

    def row(unit: str, ours: float, java: float) -> dict[str, Any]:
        return {"unit": unit, "ours": ours, "java": java}

    paths = {
        "a_sync_latency_p50": row("ms (p50, lower is better)",
                                   ours_sync["p50_ms"], java_sync["p50_ms"]),
        "a_sync_latency_p99": row("ms (p99, lower is better)",
                                   ours_sync["p99_ms"], java_sync["p99_ms"]),
        "b_pipelined_1k": row("msgs/s", ours_produce[pipelined]["msgs_per_s"],
                               java_produce[pipelined]["msgs_per_s"]),
        "c_batch_16x1k": row("msgs/s", ours_produce[batch]["msgs_per_s"],
                              java_produce[batch]["msgs_per_s"]),
        "d_consume_200k": row("msgs/s", ours_consume["msgs_per_s"], java_consume["msgs_per_s"]),
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
            "ours_produce": ours_produce,
            "java_produce": java_produce,
            "sync_latency_windows": sync_pair,
            "prefill_seconds": round(prefill_s, 2),
            "ours_consume": ours_consume,
            "java_consume": java_consume,
            "ours_slow_handler": ours_slow,
            "java_slow_handler": java_slow,
        },
    }


def markdown(figures: dict[str, Any]) -> str:
    lines = [
        "| path | unit | ours | Java | ratio (higher = better for us) | target |",
        "|---|---|---:|---:|---:|---|",
    ]
    for name, p in figures["paths"].items():
        target = ""
        if "target" in p:
            target = f"≥ {p['target']} {'met' if p['met'] else '**not met**'}"
        lines.append(
            f"| {name} | {p['unit']} | {p['ours']} | {p['java']} | {p['ratio']} | {target} |"
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
    parser.add_argument("--seconds", type=float, default=10.0, help="per produce mode")
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument(
        "--rounds", type=int, default=2, help="produce rounds per client, alternating sides"
    )
    parser.add_argument("--latency-windows", type=int, default=8,
                        help="(a): sync-send windows per client, taking turns")  # fmt: skip
    parser.add_argument("--latency-seconds", type=float, default=3.0, help="(a): one window")
    parser.add_argument("--latency-warmup", type=float, default=10.0, help="(a): each side")
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--slow-seconds", type=float, default=20.0)
    parser.add_argument("--namesrv", help="use this cluster instead of starting one")
    parser.add_argument("--out", type=Path, default=RESULTS / "compare.json")
    args = parser.parse_args(argv)
    started = time.monotonic()
    figures = on_cluster(args.namesrv, lambda namesrv: measure(namesrv, args))
    figures["codec"] = codec.figures()
    figures["settings"] = {
        "message_bytes": 1024, "seconds": args.seconds, "warmup": args.warmup,
        "concurrency": args.concurrency, "messages": args.messages, "rounds": args.rounds,
        "latency_windows": args.latency_windows, "latency_seconds": args.latency_seconds,
        "slow_seconds": args.slow_seconds, "took_seconds": round(time.monotonic() - started),
    }  # fmt: skip
    written = write_results(args.out, figures)  # adds the calibration the table quotes
    args.out.with_suffix(".md").write_text(markdown(written))
    chart(written, args.out.with_suffix(".png"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
