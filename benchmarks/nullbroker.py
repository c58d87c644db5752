"""Both clients against a null broker, where the client is the bottleneck (issue 28).

    python -m benchmarks.nullbroker [--windows 4] [--seconds 2] [--warmup 5] [--uvloop] [--pin]

``benchmarks/java/NullBroker.java`` is RocketMQ's own remoting server (``NettyRemotingServer``
from the cached 5.3.3 jars) answering route, heartbeat, send, batch, pull and offset requests
from memory, with no storage: one JVM, one port for the NameServer and broker-a. Against it
both clients run the produce paths of ``benchmarks.paired`` in paired windows - (a) one send in
flight, (b) pipelined 1 KiB sends, (c) batches of 16 x 1 KiB - and (d) push-consume drains of
``--messages`` messages (fresh group each, ours and Java's in turns, ABBA), served from one
pre-built pull batch per topic. Each side's CPU per message is its whole process's CPU (every
thread; the JVM's JIT and GC count for Java) over the messages: per window for (a)-(c), from
the first message to the last for (d). Writes ``benchmarks/results/nullbroker.json``; with
``--uvloop`` our side runs on uvloop (what uvicorn picks when it is installed) and the results
go to ``nullbroker-uvloop.json``.

The null broker shares the machine with both clients, but it is the same broker for both and
the windows alternate, so the ratio compares the clients on the same machine phase. With
``--pin`` it does not share their core: the null broker's JVM runs on one core and both
clients (ours in this process, Java's in the processes it starts) on another, as a service
limited to one CPU whose broker runs elsewhere; the results go to ``nullbroker-pinned.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Any, overload

import anyio

from rocketmq_actors.extras import uvloop_options

from . import consumer, paired
from .common import JAVA_DIR, RESULTS, LineProcess, alternating, process_cpu_s, write_results

PATHS = {  # the results' path names: the paired mode, and the issue's target ratio
    "a_sync_one_in_flight": "sync_one_in_flight",
    "b_pipelined_1k": "pipelined_1k",
    "b_pipelined_nowait_1k": "pipelined_nowait_1k",
    "c_batch_16x1k": "batch_16x1k",
}
TARGETS = {
    "b_pipelined_1k": 1.0,
    "b_pipelined_nowait_1k": 1.0,
    "c_batch_16x1k": 1.0,
    "d_consume": 1.0,
}


class NullBroker:
    """``NullBroker.java`` in a JVM of its own, on a free loopback port, for a ``with`` block."""

    def __init__(
        self,
        *,
        queues: int = 4,
        backlog: int = 25_000,
        pull_batch: int = 32,
        hold_ms: int = 1000,
        body_bytes: int = 1024,
    ) -> None:
        self._args = (0, queues, backlog, pull_batch, hold_ms, body_bytes)
        self._proc: LineProcess | None = None
        self.addr = ""

    def __enter__(self) -> NullBroker:
        from rocketmq_actors.testing.java import java_argv

        # the JVM's home and temporary files, removed at exit
        scratch = Path(tempfile.mkdtemp(prefix="rocketmq-actors-java-"))
        argv = java_argv(JAVA_DIR / "NullBroker.java", *self._args, scratch=scratch,
                         heap_mb=512)  # fmt: skip
        self._proc = LineProcess("NullBroker.java", argv, scratch)
        try:
            self.addr = f"127.0.0.1:{self._proc.reply()['port']}"
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def cpu_s(self) -> float | None:
        """The null broker's CPU seconds so far (every thread)."""
        return process_cpu_s(self.pid)

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
def null_broker(layout: tuple[int, int] | None = None, **options: int) -> Iterator[NullBroker]:
    """A :class:`NullBroker`; with ``layout`` (:func:`pin_layout`), its JVM on the second core
    (every thread of it: they inherit the core it starts on) and this thread on the first,
    which the processes it starts inherit (Java's clients), until the block ends."""
    if layout is None:
        with NullBroker(**options) as broker:
            yield broker
        return
    client_core, broker_core = layout
    saved = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, {broker_core})
        with NullBroker(**options) as broker:
            os.sched_setaffinity(0, {client_core})
            yield broker
    finally:
        os.sched_setaffinity(0, saved)


def _drains(
    namesrv: str, messages: int, rounds: int, *, uvloop: bool = False
) -> dict[str, dict[str, Any]]:
    """(d): ``rounds`` drains per client, ABBA, each a fresh group and topic; pooled figures."""
    runs: dict[str, list[dict[str, Any]]] = {"ours": [], "java": []}
    for side in alternating(rounds, "ours", "java"):
        topic = f"bench_null_consume_{time.time_ns()}"
        if side == "ours":
            runs[side].append(anyio.run(consumer.push_drain, namesrv, topic, messages,
                                        backend_options=uvloop_options(uvloop)))  # fmt: skip
        else:
            runs[side].append(consumer.java_drain(namesrv, topic, messages))
    pooled = {}
    for side, drains in runs.items():
        count = sum(d["messages"] for d in drains)
        active = sum(d["seconds"] - d["first_message_s"] for d in drains)
        cpu = sum(d["cpu_s_from_first"] for d in drains)
        pooled[side] = {
            "msgs_per_s": round(count / active) if active > 0 else 0,
            "messages": count,
            "client_cpu_us_per_msg": round(cpu / count * 1e6, 2) if count else None,
            "drains": drains,
        }
    return pooled


def _row(unit: str, ours: dict[str, Any], java: dict[str, Any]) -> dict[str, Any]:
    return {
        "unit": unit,
        "ours": ours["msgs_per_s"],
        "java": java["msgs_per_s"],
        "ratio": round(ours["msgs_per_s"] / java["msgs_per_s"], 2) if java["msgs_per_s"] else 0,
        "cpu_us_per_msg_ours": ours["client_cpu_us_per_msg"],
        "cpu_us_per_msg_java": java["client_cpu_us_per_msg"],
    }


def measure(args: argparse.Namespace) -> dict[str, Any]:
    messages = args.backlog * args.queues
    with null_broker(args.layout, queues=args.queues, backlog=args.backlog,
                     pull_batch=args.pull_batch, hold_ms=args.hold_ms) as broker:  # fmt: skip
        broker_cpu = broker.cpu_s()
        produce = anyio.run(paired.paired, broker.addr, args.windows, args.seconds, args.warmup,
                            args.concurrency, f"bench_null_{int(time.time())}",
                            backend_options=uvloop_options(args.uvloop))  # fmt: skip
        consume = _drains(broker.addr, messages, args.drains, uvloop=args.uvloop)
        broker_used = broker.cpu_s()
        requests = broker.stats()
    paths = {
        name: _row("msgs/s", produce[mode]["ours"], produce[mode]["java"])
        for name, mode in PATHS.items()
    }
    paths["d_consume"] = _row("msgs/s (from the first message)", consume["ours"], consume["java"])
    for name, path in paths.items():
        cpu_ours, cpu_java = path["cpu_us_per_msg_ours"], path["cpu_us_per_msg_java"]
        path["cpu_ratio_java_over_ours"] = (
            round(cpu_java / cpu_ours, 2) if cpu_ours and cpu_java else None
        )
        if name in TARGETS:
            path["target"] = TARGETS[name]
            path["met"] = (
                path["ratio"] >= TARGETS[name] and (path["cpu_ratio_java_over_ours"] or 0) >= 1
            )
    return {
        "paths": paths,
        "detail": {
            "produce": produce,
            "ours_consume": consume["ours"],
            "java_consume": consume["java"],
            "null_broker_cpu_s": (
                round(broker_used - broker_cpu, 2)
                if broker_used is not None and broker_cpu is not None
                else None
            ),
            "null_broker_requests": requests,
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--windows", type=int, default=4, help="(a)-(c): windows per side")
    parser.add_argument("--seconds", type=float, default=2.0, help="(a)-(c): one window")
    parser.add_argument("--warmup", type=float, default=5.0, help="(a)-(c): each client")
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--queues", type=int, default=4)
    parser.add_argument("--backlog", type=int, default=25_000, help="(d): messages per queue")
    parser.add_argument("--pull-batch", type=int, default=32, help="(d): messages per pull")
    parser.add_argument("--hold-ms", type=int, default=1000, help="(d): a pull past the end")
    parser.add_argument("--drains", type=int, default=2, help="(d): drains per client, ABBA")
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
            if args.layout else "2 cores shared with the null broker and with other work: "
            "short windows, paired (the ratio compares both clients on the same phase)"
        ),
    }  # fmt: skip
    if args.out.exists():  # what benchmarks.sendprofile and benchmarks.abtest added stays
        kept = json.loads(args.out.read_text())
        figures.update({k: kept[k] for k in ("profile", "changes") if k in kept})
    write_results(args.out, figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
