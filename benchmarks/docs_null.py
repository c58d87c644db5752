"""docs/performance.md's sections on the null broker and the README's table of them, from
``benchmarks/results/nullbroker*.json`` (``benchmarks.nullbroker``)."""

from __future__ import annotations

import json
from typing import Any

from benchmarks.common import RESULTS
from benchmarks.compare import target_cell

__all__ = ["README_NULL_NOTE", "load", "null_sections", "readme_null_table", "windows_row"]


def load(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((RESULTS / f"{name}.json").read_text())
    return loaded


def windows_row(path: str, detail: dict[str, Any]) -> str:
    ours = detail["ours"]
    java = detail["java"]
    ratios = []
    windows = detail["windows"]
    for first, second in zip(windows[::2], windows[1::2], strict=True):
        pair = {first["side"]: first["msgs_per_s"], second["side"]: second["msgs_per_s"]}
        ratios.append(pair["ours"] / pair["java"])
    return (
        f"| {path} | {ours['msgs_per_s']} | {java['msgs_per_s']} | "
        f"{min(ratios):.2f}-{max(ratios):.2f} | {ours['client_cpu_us_per_msg']} / "
        f"{java['client_cpu_us_per_msg']} | {ours['machine_idle_pct']} / "
        f"{java['machine_idle_pct']} |"
    )


NULL_METHOD = """\
`python -m benchmarks.nullbroker` (part of `make bench`) runs both clients against a null broker
(`benchmarks/java/NullBroker.java`): RocketMQ's own remoting server (`NettyRemotingServer` of
the 5.3.3 jars, the broker's network layer) answering route, heartbeat, send, batch, pull and
offset requests from memory with no storage, so the client is the bottleneck, as it is in
production where the broker runs on other machines. The produce paths take turns in paired
windows as above; (d) is push-consume drains (fresh group and topic each, ABBA order) of
messages served from one pre-built pull batch per topic. Client CPU per message is the whole
client process's CPU (every thread: the JVM's JIT and GC count for Java) over its messages, per
window for (a)-(c) and from the first message to the last for (d). A target is met when the
throughput ratio is at least the target and our CPU per message at most Java's.
"""


def _null_paths(null: dict[str, Any]) -> list[str]:
    """The paths table of a null-broker results file."""
    lines = [
        "| path | ours msgs/s | Java msgs/s | ratio | client CPU us/msg, ours / Java | target |",
        "|---|---:|---:|---:|---|---|",
    ]
    for name, p in null["paths"].items():
        lines.append(
            f"| {name} | {p['ours']} | {p['java']} | {p['ratio']} | "
            f"{p['cpu_us_per_msg_ours']} / {p['cpu_us_per_msg_java']} | {target_cell(p)} |"
        )
    return lines


def _null_variant(null: dict[str, Any], title: str, intro: str) -> list[str]:
    """A section for a variant run of the null-broker paths: its title, what differs, its
    settings and its paths table."""
    settings = ", ".join(f"{k} {v}" for k, v in null["settings"].items())
    return [f"### {title}\n", f"{intro} Settings: {settings}.\n", *_null_paths(null), ""]


def _null_section(null: dict[str, Any]) -> list[str]:
    lines = [
        "## Against a null broker: the client is the bottleneck (`nullbroker.json`)\n",
        NULL_METHOD,
        f"Machine: {null['machine']}, Python {null['python']}, JSON parser "
        f"{null['json_backend']}, calibration `sum(range(1000))` "
        f"{null['calibration_sum_range_1000_us']} us. Settings: "
        + ", ".join(f"{k} {v}" for k, v in null["settings"].items())
        + ".\n",
        *_null_paths(null),
    ]
    lines += [
        "",
        "Produce paths window by window (ours / Java):\n",
        "| path | ours msgs/s | Java msgs/s | ratio per pair of windows | client CPU us/msg |"
        " machine idle % |\n|---|---:|---:|---|---|---|",
        *[windows_row(name, detail) for name, detail in null["detail"]["produce"].items()],
        "",
    ]
    profile = null.get("profile")
    if profile:
        lines += [
            "Where our time goes on the pipelined path (b) against the null broker "
            f"(`python -m benchmarks.sendprofile`: {profile['method']}, "
            f"{profile['profiled_run']['msgs_per_s']} msgs/s while profiled, "
            f"{profile['samples']} samples). Self: the function on top of the stack; "
            "inclusive: anywhere on it (ours only).\n",
            "| self | % | inclusive (rocketmq_actors) | % |",
            "|---|---:|---|---:|",
            *[
                f"| `{s['function']}` | {s['share_pct']} | `{i['function']}` | {i['share_pct']} |"
                for s, i in zip(profile["top"], profile["inclusive_ours"], strict=False)
            ],
            "",
        ]
    changes = null.get("changes", [])
    if changes:
        lines += [
            "What each change moved, before against after in the same run "
            "(`python -m benchmarks.abtest`: fresh processes taking turns on one null broker):\n",
            "| change | path | before msgs/s | after msgs/s | before CPU us/msg |"
            " after CPU us/msg | CPU us/msg per window, before / after |",
            "|---|---|---:|---:|---:|---:|---|",
            *[
                f"| {c['change']} | {c['path']} | {c['before']['msgs_per_s']} | "
                f"{c['after']['msgs_per_s']} | {c['before']['client_cpu_us_per_msg']} | "
                f"{c['after']['client_cpu_us_per_msg']} | "
                + " / ".join(
                    ", ".join(str(w["client_cpu_us_per_msg"]) for w in c[side]["windows"])
                    for side in ("before", "after")
                )
                + " |"
                for c in changes
            ],
            "",
        ]
    return lines


#: the variant runs of the null-broker paths: results file, title, what differs
VARIANTS = [
    ("nullbroker-uvloop", "The same with our side on uvloop (`nullbroker-uvloop.json`)",
     "`python -m benchmarks.nullbroker --uvloop`: our producer and consumer run on uvloop "
     "(the `uvloop` extra; uvicorn picks it when it is installed), Java as above, in the "
     "same paired windows. The library does not choose the event loop: the application "
     "does (uvicorn picks uvloop when it is installed; `anyio.run(main, backend_options="
     "rocketmq_actors.extras.uvloop_options())` elsewhere), so this is a measured option "
     "for users, not a default."),
    ("nullbroker-pinned", "One core each (`nullbroker-pinned.json`)",
     "`python -m benchmarks.nullbroker --pin`: the same paths, with the null broker's JVM on "
     "one core and both clients, taking turns, on the other (`os.sched_setaffinity`: the "
     "JVM's threads and the Java client's process inherit theirs). No thread of the broker "
     "takes a client's core, as when the broker runs on other machines, and each client "
     "has one core, as a service limited to one CPU: the Java client's sender, Netty, JIT "
     "and GC threads share it, and its rate is what one core of it does, as ours is. The "
     "targets are judged on the shared machine above; this says how the clients compare "
     "per core."),
]  # fmt: skip


def null_sections() -> list[str]:
    """Every null-broker section of docs/performance.md whose results file exists."""
    lines = _null_section(load("nullbroker")) if (RESULTS / "nullbroker.json").exists() else []
    for name, title, intro in VARIANTS:
        if (RESULTS / f"{name}.json").exists():
            lines += _null_variant(load(name), title, intro)
    return lines


README_NULL_NOTE = (
    "Against the null broker (the client is the bottleneck), both clients in paired windows\n"
    "(`nullbroker.json`, docs/performance.md):"
)


def readme_null_table() -> list[str]:
    """The README's table of the null-broker paths (empty without their results file)."""
    if not (RESULTS / "nullbroker.json").exists():
        return []
    return [
        README_NULL_NOTE,
        "",
        "| path | msgs/s ours / Java | ratio | CPU us/msg ours / Java |",
        "|---|---:|---:|---|",
        *[
            f"| {name} | {p['ours']} / {p['java']} | {p['ratio']} | "
            f"{p['cpu_us_per_msg_ours']} / {p['cpu_us_per_msg_java']} |"
            for name, p in load("nullbroker")["paths"].items()
        ],
        "",
    ]
