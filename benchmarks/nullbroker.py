"""Both clients against a null broker, where the client is the bottleneck (issues 28, 46).

    python -m benchmarks.nullbroker [--windows 4] [--seconds 3] [--warmup 30] [--uvloop] [--pin]
                                    [--broker c|java]

The null broker (``benchmarks/c/nullbroker.c``, compiled on first use; ``--broker java`` for
``benchmarks/java/NullBroker.java``, RocketMQ's own remoting server) answers route, heartbeat,
send, batch, pull and offset requests from memory, with no storage: one process, one port for
the NameServer and broker-a. Against it both clients run, in one rotation: the produce paths of
``benchmarks.paired`` in paired windows - (a) one send in flight, (b) pipelined 1 KiB sends,
(c) batches of 16 x 1 KiB, (e) pipelined 1 KiB sends with auto-batching on both sides (ours
``auto_batch=True``, Java's ``setAutoBatch(true)``) - after a warm-up of ``--warmup`` seconds
per path and client, and (d) push-consume drains of ``--queues`` x ``--backlog`` messages (1M
by default; a fresh group and topic each): each client drains until it has drained for
``--warmup`` seconds (the Java client in one JVM throughout, so that its JIT warms), then the
measured drains in turns, ABBA.
Every window and drain is in the results, warm-up drains included.

Each side's CPU per message is its whole process's CPU (every thread; the JVM's JIT and GC
count for Java) over the messages: per window for (a)-(c), from the first message to the last
for (d). Every window also records its run, the load average, a calibration taken before it
and the null broker's own CPU per message; the rules of ``benchmarks.rotation`` decide whether
the run may be published (its ``verdict``): a run that breaks them is written, reported on
stderr and exits 1. Writes ``benchmarks/results/nullbroker.json``; with ``--uvloop`` our side
runs on uvloop (what uvicorn picks when it is installed): ``nullbroker-uvloop.json``. With
``--pin`` the null broker runs on one core and both clients (ours in this process, Java's in
the processes it starts) on another, each client as a service limited to one CPU:
``nullbroker-pinned.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Any, overload

import anyio

from rocketmq_actors.extras import uvloop_options

from . import consumer, paired, rotation
from .common import (
    JAVA_DIR,
    RESULTS,
    TREE,
    LineProcess,
    alternating,
    run_main,
    write_results,
)

PATHS = {  # the results' path names: the paired mode, and the issue's target ratio
    "a_sync_one_in_flight": "sync_one_in_flight",
    "b_pipelined_1k": "pipelined_1k",
    "b_pipelined_nowait_1k": "pipelined_nowait_1k",
    "c_batch_16x1k": "batch_16x1k",
    "e_autobatch_1k": "pipelined_autobatch_1k",
    "e_autobatch_nowait_1k": "pipelined_autobatch_nowait_1k",
}
#: paths the null broker's CPU budget does not apply to, and why (written in every verdict)
BUDGET_EXEMPT = {
    "a_sync_one_in_flight": (
        "one message in flight: the kernel charges each end of a loopback round trip a wake-up "
        "and a transmit, whatever the program (the broker's system CPU per message is in its "
        "windows), so no null broker costs a fifth of a client here; the path is bound by "
        "round trips, not CPU, and both clients meet the same broker"
    ),
}
#: the auto-batching paths (ours ``auto_batch=True``, Java ``setAutoBatch(true)``) and the path
#: whose Java CPU per message (no auto-batching) bounds theirs: at most :data:`AUTOBATCH_CPU` of it
AUTOBATCH_PATHS = ("e_autobatch_1k", "e_autobatch_nowait_1k")
AUTOBATCH_BASELINE = "b_pipelined_1k"
AUTOBATCH_CPU = 0.5
TARGETS = {
    "e_autobatch_1k": 1.0,
    "e_autobatch_nowait_1k": 1.0,
    "b_pipelined_1k": 1.0,
    "b_pipelined_nowait_1k": 1.0,
    "c_batch_16x1k": 1.0,
    "d_consume": 1.0,
}


C_SOURCE = Path(__file__).resolve().parent / "c" / "nullbroker.c"
C_BINARY = TREE / ".state" / "bin" / "nullbroker"


def c_null_broker() -> Path:
    """``benchmarks/c/nullbroker.c`` compiled (again when the source changes) into
    ``.state/bin``; SystemExit without a C compiler."""
    if C_BINARY.exists() and C_SOURCE.stat().st_mtime <= C_BINARY.stat().st_mtime:
        return C_BINARY
    cc = shutil.which(os.environ.get("CC", "cc"))
    if cc is None:
        raise SystemExit("the null broker needs a C compiler (apt-get install gcc); "
                         "or pass --broker java")  # fmt: skip
    C_BINARY.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([cc, "-O2", "-o", str(C_BINARY), str(C_SOURCE), "-lpthread"], check=True)
    return C_BINARY


class NullBroker:
    """A null broker in a process of its own, on a free loopback port, for a ``with`` block:
    ``benchmarks/c/nullbroker.c`` (``kind="c"``, the default) or ``NullBroker.java``."""

    def __init__(
        self,
        *,
        kind: str = "c",
        queues: int = 4,
        backlog: int = 25_000,
        pull_batch: int = 32,
        hold_ms: int = 1000,
        body_bytes: int = 1024,
    ) -> None:
        if kind not in BROKERS:
            raise ValueError(f"kind: one of {sorted(BROKERS)}, not {kind!r}")
        self.kind = kind
        self._args = (0, queues, backlog, pull_batch, hold_ms, body_bytes)
        self._proc: LineProcess | None = None
        self.addr = ""

    def __enter__(self) -> NullBroker:
        # the process's working directory (the JVM's home and temporary files), removed at exit
        scratch = Path(tempfile.mkdtemp(prefix="rocketmq-actors-nullbroker-"))
        if self.kind == "c":
            argv = [str(c_null_broker()), *map(str, self._args)]
        else:
            from rocketmq_actors.testing.java import java_argv

            argv = java_argv(JAVA_DIR / "NullBroker.java", *self._args, scratch=scratch,
                             heap_mb=512)  # fmt: skip
        self._proc = LineProcess(BROKERS[self.kind], argv, scratch)
        try:
            self.addr = f"127.0.0.1:{self._proc.reply()['port']}"
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def stats(self) -> dict[str, Any]:
        """Requests served so far by code, and the codes it answered without knowing them."""
        assert self._proc is not None
        return self._proc.ask("stats")

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._proc is not None:
            self._proc.close(timeout=30)


#: the null brokers: ``--broker`` -> what the results call it
BROKERS = {"c": "benchmarks/c/nullbroker.c", "java": "benchmarks/java/NullBroker.java"}


@overload
def pin_layout() -> tuple[int, int]: ...
@overload
def pin_layout(*, required: bool) -> tuple[int, int] | None: ...
def pin_layout(*, required: bool = True) -> tuple[int, int] | None:
    """``--pin``'s cores: (the clients', the null broker's), the first two this process may
    run on; where there are not two (or no ``os.sched_setaffinity``), SystemExit, or None when
    not ``required``."""
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_setaffinity") else []
    if len(cores) >= 2:
        return cores[0], cores[1]
    if required:
        raise SystemExit(f"--pin needs os.sched_setaffinity and two cores; found {cores}")
    return None


@contextlib.contextmanager
def null_broker(
    layout: tuple[int, int] | None = None, kind: str = "c", **options: int
) -> Iterator[NullBroker]:
    """A :class:`NullBroker`; with ``layout`` (:func:`pin_layout`), its JVM on the second core
    (every thread of it: they inherit the core it starts on) and this thread on the first,
    which the processes it starts inherit (Java's clients), until the block ends."""
    if layout is None:
        with NullBroker(kind=kind, **options) as broker:
            yield broker
        return
    client_core, broker_core = layout
    saved = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, {broker_core})
        with NullBroker(kind=kind, **options) as broker:
            os.sched_setaffinity(0, {client_core})
            yield broker
    finally:
        os.sched_setaffinity(0, saved)


class JavaConsumer(LineProcess):
    """``ConsumeBench.java --serve``: one JVM that drains a topic per request, so that its JIT
    warms over the drains as a long-running consumer's does."""

    def __init__(self, namesrv: str) -> None:
        from rocketmq_actors.testing.java import java_argv

        scratch = Path(tempfile.mkdtemp(prefix="rocketmq-actors-java-"))
        argv = java_argv(JAVA_DIR / "ConsumeBench.java", "--serve", namesrv, scratch=scratch,
                         heap_mb=512)  # fmt: skip
        super().__init__("ConsumeBench.java", argv, scratch)
        self.reply()

    def drain(self, topic: str, count: int) -> dict[str, Any]:
        return self.ask(f"drain {topic} bench_java_{time.time_ns()} {count}")


def _drains(
    namesrv: str, args: argparse.Namespace, observe: rotation.Observer
) -> list[dict[str, Any]]:
    """(d): each client drains ``--backlog`` x ``--queues`` messages (a fresh group and topic
    each time) until it has drained for ``--warmup`` seconds (its warm-up drains), then
    ``--drains`` measured drains each, in turns (ABBA); every drain is returned, with its
    phase, its side and the :class:`~benchmarks.rotation.Observer`'s fields."""
    messages = args.backlog * args.queues
    java = JavaConsumer(namesrv)
    try:

        def one(side: str, phase: str) -> dict[str, Any]:
            topic = f"bench_null_consume_{time.time_ns()}"
            probe = observe(os.getpid() if side == "ours" else java.pid)
            if side == "ours":
                drain = anyio.run(consumer.push_drain, namesrv, topic, messages,
                                  backend_options=uvloop_options(args.uvloop))  # fmt: skip
            else:
                drain = java.drain(topic, messages)
            seen = drain["messages"]
            active = drain["seconds"] - drain["first_message_s"]
            return {
                "side": side, "phase": phase, **drain, "active_seconds": round(active, 2),
                "client_cpu_us_per_msg": round(drain["cpu_s_from_first"] / seen * 1e6, 2),
                **probe(seen),
            }  # fmt: skip

        drains: list[dict[str, Any]] = []
        for side in ("java", "ours"):
            warmed = 0.0
            while warmed < args.warmup or not drains or drains[-1]["side"] != side:
                drains.append(one(side, "warm-up"))
                warmed += drains[-1]["seconds"]
        for side in alternating(args.drains, "ours", "java"):
            drains.append(one(side, "measured"))
        return drains
    finally:
        java.close()


def mark_targets(paths: dict[str, dict[str, Any]]) -> None:
    """Give each path with a target its ``target`` and whether the run ``met`` it: throughput
    at least the target's share of Java's and CPU per message at most Java's (the auto-batched
    paths: at most ``cpu_target_us_per_msg``, half Java's without auto-batching), read from the
    measured figures, not the rounded ratios (a ratio printed 1.0 may be under it)."""
    for name, path in paths.items():
        if name not in TARGETS:
            continue
        path["target"] = TARGETS[name]
        ours_cpu, java_cpu = path["cpu_us_per_msg_ours"], path["cpu_us_per_msg_java"]
        fast_enough = path["ours"] >= TARGETS[name] * path["java"]
        if name in AUTOBATCH_PATHS:  # Java's with auto-batching, and half its CPU without
            baseline = paths[AUTOBATCH_BASELINE]["cpu_us_per_msg_java"]
            path["cpu_target_us_per_msg"] = round(AUTOBATCH_CPU * baseline, 2) if baseline else None
            cheap_enough = bool(baseline and ours_cpu and ours_cpu <= AUTOBATCH_CPU * baseline)
        else:
            cheap_enough = bool(ours_cpu and java_cpu and ours_cpu <= java_cpu)
        path["met"] = fast_enough and cheap_enough


def measure(args: argparse.Namespace) -> dict[str, Any]:
    run_id = rotation.new_run_id()
    load_before = round(os.getloadavg()[0], 2)
    with null_broker(args.layout, kind=args.broker, queues=args.queues, backlog=args.backlog,
                     pull_batch=args.pull_batch, hold_ms=args.hold_ms) as broker:  # fmt: skip
        observe = rotation.Observer(run_id, broker.pid)
        produce = anyio.run(
            functools.partial(paired.paired, observe=observe), broker.addr, args.windows,
            args.seconds, args.warmup, args.concurrency, f"bench_null_{int(time.time())}",
            backend_options=uvloop_options(args.uvloop),
        )  # fmt: skip
        drains = _drains(broker.addr, args, observe)
        requests = broker.stats()
    paths = {name: rotation.path_figures(produce[mode]["windows"]) for name, mode in PATHS.items()}
    paths["d_consume"] = rotation.path_figures(
        [d for d in drains if d["phase"] == "measured"], seconds_key="active_seconds"
    )
    mark_targets(paths)
    return {
        "run_id": run_id,
        "null_broker": BROKERS[args.broker],
        "paths": paths,
        "verdict": rotation.verdict(paths, rotation.cores(), load_before, BUDGET_EXEMPT),
        "detail": {"produce": produce, "consume_drains": drains, "null_broker_requests": requests},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--windows", type=int, default=4, help="(a)-(c): windows per side")
    parser.add_argument("--seconds", type=float, default=3.0, help="(a)-(c): one window")
    parser.add_argument(
        "--warmup", type=float, default=30.0, help="seconds of warm-up per path and client"
    )
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--queues", type=int, default=4)
    parser.add_argument("--backlog", type=int, default=250_000, help="(d): messages per queue")
    parser.add_argument("--pull-batch", type=int, default=32, help="(d): messages per pull")
    parser.add_argument("--hold-ms", type=int, default=1000, help="(d): a pull past the end")
    parser.add_argument(
        "--drains", type=int, default=2, help="(d): measured drains per client, ABBA"
    )
    parser.add_argument(
        "--broker", choices=sorted(BROKERS), default="c", help="the null broker (default c)"
    )
    parser.add_argument("--uvloop", action="store_true", help="our side on uvloop")
    parser.add_argument(
        "--pin", action="store_true", help="the null broker on one core, both clients on another"
    )
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    uvloop_options(args.uvloop)  # without the extra: MissingExtra, before anything starts
    args.layout = pin_layout() if args.pin else None
    args.out = args.out or RESULTS / (
        f"nullbroker{'-uvloop' if args.uvloop else ''}{'-pinned' if args.pin else ''}.json"
    )
    started = time.monotonic()
    figures = measure(args)
    figures["settings"] = {
        "message_bytes": 1024, "windows": args.windows, "window_seconds": args.seconds,
        "warmup": args.warmup, "concurrency": args.concurrency, "queues": args.queues,
        "consume_messages": args.backlog * args.queues, "pull_batch": args.pull_batch,
        "drains": args.drains, "took_seconds": round(time.monotonic() - started),
        "our_event_loop": "uvloop" if args.uvloop else "asyncio",
        "machine": (
            f"the clients (taking turns) on core {args.layout[0]}, the null broker on core "
            f"{args.layout[1]}: short windows, paired"
            if args.layout else f"{rotation.cores()} cores shared by the null broker and both "
            "clients: short windows, paired (the ratio compares both clients on the same phase)"
        ),
    }  # fmt: skip
    write_results(args.out, figures)
    if not figures["verdict"]["publishable"]:
        sys.stderr.write(
            f"{args.out.name}: not publishable: {'; '.join(figures['verdict']['why'])}\n"
        )
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(run_main(main))
