"""docs/performance.md's sections on the null broker and the README's table of them, from
``benchmarks/results/nullbroker*.json`` (``benchmarks.nullbroker``). A results file is
published only when its run kept the rules of ``benchmarks.rotation`` (its ``verdict``):
:func:`load_run` raises :class:`Unpublishable` otherwise."""

from __future__ import annotations

import json
from typing import Any

from benchmarks.common import RESULTS
from benchmarks.compare import target_cell

__all__ = ["Unpublishable", "load", "load_run", "null_sections", "readme_null_table"]


class Unpublishable(SystemExit):
    """A results file whose run broke the rotation rules (or predates them)."""


def load(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((RESULTS / f"{name}.json").read_text())
    return loaded


def load_run(name: str) -> dict[str, Any]:
    """A rotation's results file, refused unless its verdict says it may be published."""
    run = load(name)
    verdict = run.get("verdict")
    if verdict is None:
        raise Unpublishable(f"{name}.json has no verdict: it predates benchmarks.rotation")
    if not verdict["publishable"]:
        raise Unpublishable(f"{name}.json may not be published: {'; '.join(verdict['why'])}")
    return run


MEANING = """\
What the ratios mean. **Throughput, ours / Java, on this machine**: both clients took turns on
the same cores, shared with the null broker, so a client that can use both cores (the Java
client's threads) may run at a rate that one event-loop thread (ours) cannot reach; it is what
each client gives on a small machine, not a per-core figure. **CPU per message, Java / ours,
per core**: each client's whole process CPU (every thread; the JVM's JIT and GC count for
Java) over its messages; higher is better for us, and it says how much work each client does
for a message whatever the cores.
"""

NULL_METHOD = """\
`python -m benchmarks.nullbroker` (part of `make bench`) runs both clients against a null
broker, `benchmarks/c/nullbroker.c`: it answers route, heartbeat, send, batch, pull and offset
requests from memory with no storage, each connection a thread doing blocking reads and writes,
so that its CPU per message is a small part of either client's. Every path runs in one
rotation (`benchmarks/rotation.py`): each client warms each path for `warmup` seconds, then
the produce paths take turns in paired windows (ABBA), and the consume path (d) in drains of
`consume_messages` messages, a fresh group and topic each; the Java consumer runs in one JVM
for all its drains, whose first ones (until it has drained for `warmup` seconds) are its
warm-up. Every window and drain records its run, the load average, a calibration taken just
before it, the null broker's CPU per message and what other processes took. A run is
published only when every ratio comes from one run, the null broker used at most a fifth of the
cheaper client's CPU per message on every path (the one-in-flight path excepted, for the reason
its verdict gives), the load average was at most the machine's cores when the run began, and
other processes took at most half a core in every window. A target is met when the throughput
ratio is at least the target and our CPU per message at most Java's; on the auto-batching paths
(e), Java has auto-batching on too, and our CPU per message must be at most half of Java's
without it (path `b_pipelined_1k`'s).
"""


def _paths_table(run: dict[str, Any]) -> list[str]:
    lines = [
        "| path | msgs/s ours | msgs/s Java | throughput ours / Java (on this machine) |"
        " CPU us/msg ours / Java | CPU Java / ours (per core) | null broker CPU us/msg"
        " (share of the cheaper client) | target |",
        "|---|---:|---:|---:|---|---:|---|---|",
    ]
    for name, p in run["paths"].items():
        lines.append(
            f"| {name} | {p['ours']} | {p['java']} | {p['ratio']} | "
            f"{p['cpu_us_per_msg_ours']} / {p['cpu_us_per_msg_java']} | "
            f"{p['cpu_ratio_java_over_ours']} | {p['broker_cpu_us_per_msg']} "
            f"({p['broker_share_of_cheaper_client']:.0%}) | {target_cell(p)} |"
        )
    return lines


def _windows_table(run: dict[str, Any]) -> list[str]:
    lines = [
        "| path | side | msgs/s | CPU us/msg | null broker CPU us/msg (system) | load 1 min |"
        " other processes, cores | calibration us |",
        "|---|---|---:|---:|---|---:|---:|---:|",
    ]
    for name, detail in run["detail"]["produce"].items():
        for w in detail["windows"]:
            lines.append(
                f"| {name} | {w['side']} | {w['msgs_per_s']} | {w['client_cpu_us_per_msg']} | "
                f"{w['broker_cpu_us_per_msg']} ({w['broker_sys_us_per_msg']}) | {w['load_1m']} | "
                f"{w['other_processes_cores']} | {w['calibration_us']} |"
            )
    return lines


def _drains_table(run: dict[str, Any]) -> list[str]:
    lines = [
        "| side | phase | messages | first message s | msgs/s from the first | CPU us/msg |"
        " null broker CPU us/msg | load 1 min | other processes, cores | calibration us |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for d in run["detail"]["consume_drains"]:
        lines.append(
            f"| {d['side']} | {d['phase']} | {d['messages']} | {d['first_message_s']} | "
            f"{d['msgs_per_s_from_first']} | {d['client_cpu_us_per_msg']} | "
            f"{d['broker_cpu_us_per_msg']} | {d['load_1m']} | {d['other_processes_cores']} | "
            f"{d['calibration_us']} |"
        )
    return lines


def _run_line(run: dict[str, Any]) -> str:
    verdict = run["verdict"]
    settings = ", ".join(f"{k} {v}" for k, v in run["settings"].items())
    exempt = "; ".join(f"{k}: {v}" for k, v in verdict.get("budget_exempt", {}).items())
    return (
        f"Run `{run['run_id']}` on {run['null_broker']}: Python {run['python']}, JSON parser "
        f"{run['json_backend']}, calibration `sum(range(1000))` "
        f"{run['calibration_sum_range_1000_us']} us at the end, {verdict['cores']} cores, load "
        f"average {verdict['load_before']} when the run began. Settings: {settings}. Outside the "
        f"null broker's budget: {exempt or 'none'}.\n"
    )


def _run_section(title: str, intro: str, run: dict[str, Any]) -> list[str]:
    return [
        f"{title}\n",
        intro,
        _run_line(run),
        *_paths_table(run),
        "",
        "Every produce window, in the order they ran:\n",
        *_windows_table(run),
        "",
        "Every drain of (d), in the order they ran (warm-up drains included):\n",
        *_drains_table(run),
        "",
    ]


#: the variant runs of the null-broker paths: results file, title, what differs
VARIANTS = [
    ("nullbroker-uvloop", "### The same with our side on uvloop (`nullbroker-uvloop.json`)",
     "`python -m benchmarks.nullbroker --uvloop`: our producer and consumer run on uvloop "
     "(the `uvloop` extra; uvicorn picks it when it is installed), Java as above, in one "
     "rotation of its own. The library does not choose the event loop: the application does "
     "(`anyio.run(main, backend_options=rocketmq_actors.extras.uvloop_options())`).\n"),
    ("nullbroker-pinned", "### One core each (`nullbroker-pinned.json`)",
     "`python -m benchmarks.nullbroker --pin`: the null broker on one core and both clients, "
     "taking turns, on the other (`os.sched_setaffinity`; the Java client's process inherits "
     "it): each client has one core, as a service limited to one CPU, so here the throughput "
     "ratio is per core too.\n"),
]  # fmt: skip


def null_sections() -> list[str]:
    """The null-broker sections of docs/performance.md: ``nullbroker.json`` (required) and
    each variant whose results file exists; :class:`Unpublishable` for a run that may not be
    published."""
    lines = _run_section(
        "## Against the Java client, on a null broker (`nullbroker.json`)",
        MEANING + "\n" + NULL_METHOD,
        load_run("nullbroker"),
    )
    for name, title, intro in VARIANTS:
        if (RESULTS / f"{name}.json").exists():
            lines += _run_section(title, intro, load_run(name))
    return lines


def _standing(run: dict[str, Any]) -> str:
    """Which client leads on which paths, in words read from the run."""
    paths = run["paths"]

    def names(test: Any) -> str:
        found = [f"`{n}`" for n, p in paths.items() if test(p)]
        return ", ".join(found) or "none"

    def cheaper(path: dict[str, Any]) -> bool:
        ours, java = path["cpu_us_per_msg_ours"], path["cpu_us_per_msg_java"]
        return bool(ours and java and ours < java)

    # (the measured figures, not the rounded ratios: a ratio printed 1.0 may be either side)
    return (
        f"Ours has the higher throughput on {names(lambda p: p['ours'] > p['java'])}, and costs "
        f"less CPU per message on {names(cheaper)}; the targets the paths have not met are open "
        "work."
    )


def readme_null_table() -> list[str]:
    """The README's table: the null-broker paths of ``nullbroker.json``."""
    run = load_run("nullbroker")
    return [
        "Against the Java client 5.3.3 on a null broker, both warmed up, in one rotation "
        f"(`nullbroker.json`, run `{run['run_id']}`; method and every window: "
        "docs/performance.md). Throughput is on this machine "
        f"({run['verdict']['cores']} cores shared by both clients and the null broker); "
        f"CPU per message is per core. {_standing(run)}",
        "",
        "| path | msgs/s ours / Java | throughput ours / Java | CPU us/msg ours / Java |"
        " CPU Java / ours |",
        "|---|---:|---:|---|---:|",
        *[
            f"| {name} | {p['ours']} / {p['java']} | {p['ratio']} | "
            f"{p['cpu_us_per_msg_ours']} / {p['cpu_us_per_msg_java']} | "
            f"{p['cpu_ratio_java_over_ours']} |"
            for name, p in run["paths"].items()
        ],
        "",
    ]
