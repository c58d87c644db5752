"""The rules a comparison of clients keeps before it may publish a ratio (issue 46).

- Every window (a produce window, a consume drain) carries the run it belongs to, the machine's
  load average and a calibration taken just before it, and the null broker's CPU during it.
- A ratio comes from windows of one run only (:func:`path_figures` refuses a mix): both
  clients took turns in that run, on the same machine state.
- The null broker costs at most a fifth of the cheaper client's CPU per message on every path
  (:data:`BROKER_BUDGET`; its CPU over all the path's windows, both sides', over their
  messages), or the run fails: a broker that takes as much CPU as a client caps whichever
  client shares its cores. Its cost while each side ran is written too.
- A run on a machine whose load average exceeded its cores when the run began, or during which
  other processes took more than :data:`OTHERS_LIMIT` cores in any window, is marked
  overloaded; the docs generator refuses to publish it (:func:`verdict`). Each window's load
  average is recorded too, but it is not the test: the Java client's own threads (16 senders
  in the batch path, 20 consumer threads) lift it above 2 on a 2-core machine by themselves.
  What other processes took is measured directly: the machine's busy CPU in the window less
  the measured client's and the null broker's.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from .common import calibration_us, machine_ticks, process_cpu_s, process_cpu_split

#: the null broker's CPU per message, at most this share of the cheaper client's on every path
BROKER_BUDGET = 0.2
#: other processes (the idle client and this harness included) may take this many cores
OTHERS_LIMIT = 0.5


class MixedRuns(ValueError):
    """Windows of different runs were given to one ratio."""


def new_run_id() -> str:
    return uuid.uuid4().hex[:12]


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


class Observer:
    """What each window records beside its client's figures: the run, the load average, a
    calibration (taken before the window, outside it), the null broker's CPU per message (its
    process ``broker_pid``, every thread; and the system part of it, the kernel's) and the
    whole machine's busy cores during the window."""

    def __init__(self, run_id: str, broker_pid: int | None) -> None:
        self.run_id = run_id
        self._broker_pid = broker_pid

    def __call__(self, client_pid: int) -> Callable[[int], dict[str, Any]]:
        """Before a window of the client ``client_pid``: what to call after it."""
        calibration = calibration_us()
        broker_before = process_cpu_split(self._broker_pid)
        client_before = process_cpu_s(client_pid)
        ticks_before = machine_ticks()
        began = time.monotonic()

        def end(messages: int) -> dict[str, Any]:
            seconds = time.monotonic() - began
            broker_after, ticks_after = process_cpu_split(self._broker_pid), machine_ticks()
            client_after = process_cpu_s(client_pid)
            busy_cores = other_cores = None
            if ticks_before is not None and ticks_after is not None and seconds > 0:
                idle = ticks_after[0] - ticks_before[0]
                total = ticks_after[1] - ticks_before[1]
                busy_cores = (total - idle) / os.sysconf("SC_CLK_TCK") / seconds
                if None not in (broker_before, broker_after, client_before, client_after):
                    assert broker_before is not None and broker_after is not None
                    assert client_before is not None and client_after is not None
                    own = sum(broker_after) - sum(broker_before) + client_after - client_before
                    other_cores = round(max(0.0, busy_cores - own / seconds), 2)
                busy_cores = round(busy_cores, 2)
            broker: dict[str, float | None] = {
                "broker_cpu_us_per_msg": None,
                "broker_sys_us_per_msg": None,
            }
            if broker_before is not None and broker_after is not None and messages:
                user = broker_after[0] - broker_before[0]
                system = broker_after[1] - broker_before[1]
                broker = {"broker_cpu_us_per_msg": round((user + system) / messages * 1e6, 2),
                          "broker_sys_us_per_msg": round(system / messages * 1e6, 2)}  # fmt: skip
            return {
                "run_id": self.run_id,
                "load_1m": round(os.getloadavg()[0], 2),
                "calibration_us": calibration,
                "machine_busy_cores": busy_cores,
                "other_processes_cores": other_cores,
                **broker,
            }

        return end


def _one_run(windows: Iterable[dict[str, Any]]) -> str:
    runs = {w.get("run_id") for w in windows}
    if len(runs) != 1 or None in runs:
        raise MixedRuns(f"a ratio needs windows of one run, got runs {sorted(map(str, runs))}")
    (run,) = runs
    assert run is not None
    return str(run)


def _side(windows: list[dict[str, Any]], *, seconds_key: str) -> dict[str, Any]:
    messages = sum(w["messages"] for w in windows)
    seconds = sum(w[seconds_key] for w in windows)
    client_cpu = [w["client_cpu_us_per_msg"] * w["messages"] for w in windows]
    broker_cpu = [w["broker_cpu_us_per_msg"] for w in windows]
    return {
        "msgs_per_s": round(messages / seconds) if seconds else 0,
        "messages": messages,
        "client_cpu_us_per_msg": round(sum(client_cpu) / messages, 2) if messages else None,
        "broker_cpu_us_per_msg": (
            round(sum(b * w["messages"] for b, w in zip(broker_cpu, windows, strict=True))
                  / messages, 2)
            if messages and None not in broker_cpu else None
        ),
    }  # fmt: skip


def path_figures(
    windows: list[dict[str, Any]], *, other: str = "java", seconds_key: str = "seconds"
) -> dict[str, Any]:
    """One path's pooled figures for ours and ``other`` from its windows (each with ``side``,
    ``messages``, ``seconds_key``, ``client_cpu_us_per_msg``, ``broker_cpu_us_per_msg`` and the
    :class:`Observer`'s fields): throughput ratio ours/other, CPU ratio other/ours, the
    broker's share of the cheaper client's CPU and the highest load. :class:`MixedRuns` when the
    windows are not all of one run."""
    run = _one_run(windows)
    ours = _side([w for w in windows if w["side"] == "ours"], seconds_key=seconds_key)
    theirs = _side([w for w in windows if w["side"] == other], seconds_key=seconds_key)
    cheaper = min(
        (c for c in (ours["client_cpu_us_per_msg"], theirs["client_cpu_us_per_msg"]) if c),
        default=None,
    )
    # the null broker's own CPU per message on this path: over every window, both sides'
    broker = _side(windows, seconds_key=seconds_key)["broker_cpu_us_per_msg"]
    return {
        "run_id": run,
        "ours": ours["msgs_per_s"],
        other: theirs["msgs_per_s"],
        "ratio": round(ours["msgs_per_s"] / theirs["msgs_per_s"], 2) if theirs["msgs_per_s"] else 0,
        "cpu_us_per_msg_ours": ours["client_cpu_us_per_msg"],
        f"cpu_us_per_msg_{other}": theirs["client_cpu_us_per_msg"],
        "cpu_ratio_java_over_ours": (
            round(theirs["client_cpu_us_per_msg"] / ours["client_cpu_us_per_msg"], 2)
            if ours["client_cpu_us_per_msg"] and theirs["client_cpu_us_per_msg"]
            else None
        ),
        "broker_cpu_us_per_msg": broker,
        "broker_cpu_us_per_msg_ours": ours["broker_cpu_us_per_msg"],
        f"broker_cpu_us_per_msg_{other}": theirs["broker_cpu_us_per_msg"],
        "broker_share_of_cheaper_client": (
            round(broker / cheaper, 3) if broker is not None and cheaper else None
        ),
        "max_load_1m": max(w["load_1m"] for w in windows),
        "max_other_processes_cores": max(
            (w["other_processes_cores"] for w in windows if w["other_processes_cores"] is not None),
            default=None,
        ),
        "calibration_us": [min(w["calibration_us"] for w in windows),
                           max(w["calibration_us"] for w in windows)],
    }  # fmt: skip


def verdict(
    paths: dict[str, dict[str, Any]],
    machine_cores: int,
    load_before: float,
    exempt: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Whether a run may be published: one run id over every path, the null broker within its
    budget on every path but those ``exempt`` names (with the reason, written in the verdict),
    a load average of at most ``machine_cores`` when the run began (``load_before``) and other
    processes within :data:`OTHERS_LIMIT` in every window."""
    exempt = exempt or {}
    why = []
    runs = {p["run_id"] for p in paths.values()}
    if len(runs) != 1:
        why.append(f"paths from different runs: {sorted(runs)}")
    for name, p in paths.items():
        share = p["broker_share_of_cheaper_client"]
        if name in exempt:
            continue
        if share is None:
            why.append(f"{name}: the null broker's CPU was not measured")
        elif share > BROKER_BUDGET:
            why.append(
                f"{name}: the null broker used {share:.0%} of the cheaper client's CPU per "
                f"message (budget {BROKER_BUDGET:.0%})"
            )
    overloaded = load_before > machine_cores
    if overloaded:
        why.append(f"load average {load_before} above {machine_cores} cores when the run began")
    busy = [
        n for n, p in paths.items()
        if p["max_other_processes_cores"] is None or p["max_other_processes_cores"] > OTHERS_LIMIT
    ]  # fmt: skip
    if busy:
        overloaded = True
        why.append(
            f"other processes took more than {OTHERS_LIMIT} cores (or were not measured) "
            f"during {', '.join(busy)}"
        )
    return {
        "publishable": not why,
        "overloaded": overloaded,
        "cores": machine_cores,
        "load_before": load_before,
        "why": why,
        "budget_exempt": exempt,
    }
