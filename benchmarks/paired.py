"""Produce paths, ours against the Java client, taking turns in short windows of one run.

    python -m benchmarks.paired [--windows 6] [--seconds 3] [--warmup 10] [--namesrv ADDR]

Paths (a) sync sends with one in flight, (b) pipelined 1 KiB sends with ``--concurrency`` in
flight and (c) batches of 16 x 1 KiB from ``--concurrency``/16 senders. The build VM's speed
swings within minutes, so one long run per client compares two different machines: two runs
of the same client ten minutes apart differed more than the two clients do. Here both clients
stay up (``benchmarks/java/ProduceWindows.java`` waits on stdin between windows) and take turns
in short windows, the order flipped every pair (ours-Java, Java-ours, ...), so that the VM's
phases fall on both. Each path starts with an unmeasured warm-up of ``--warmup`` seconds per
side (its code paths warm, the JVM's JIT included). Per path and side: messages over the summed
window time, and percentiles of the pooled latencies, with the same rule for both clients; every
window is kept too. Each window also records the measured client's CPU per message (the whole
process: the JVM's JIT and GC count for Java) and the share of the machine left idle (Linux).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from array import array
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio

from rocketmq_actors.producer import Producer, ProducerOptions, create_topic

from .common import (
    JAVA_DIR,
    RESULTS,
    LineProcess,
    alternating,
    machine_ticks,
    on_cluster,
    percentiles,
    run_main,
    write_results,
)
from .producer import QUEUES, nowait_window, window

MODES = {
    "sync": "sync_one_in_flight",
    "pipelined": "pipelined_1k",
    "nowait": "pipelined_nowait_1k",
    "batch": "batch_16x1k",
    "autobatch": "pipelined_autobatch_1k",
    "autobatch_nowait": "pipelined_autobatch_nowait_1k",
}
# what the other side runs for each mode: ours sends pipelined two ways - ``await send`` from
# CONCURRENCY tasks, and ``submit`` from one task with CONCURRENCY admitted (the Java
# client's asynchronous send with a callback, from one thread, is its one way)
OTHER_MODE = {"nowait": "pipelined", "autobatch_nowait": "autobatch"}


class LineSide(LineProcess):
    """Another client's process that runs produce windows when asked on its stdin, one line
    each ("MODE SECONDS" -> one JSON line), after a warm-up ({"ready": true}): the Java client
    (``benchmarks/java/ProduceWindows.java``) or a Python peer (``benchmarks/peer_*.py``)."""

    def __init__(
        self, name: str, argv: list[str], scratch: Path, env: dict[str, str] | None = None
    ) -> None:
        super().__init__(name, argv, scratch, env)
        self.errors: dict[str, int] = {}  # the failed sends' errors since the last take

    def ready(self) -> None:
        self.reply()

    def window(self, mode: str, seconds: float) -> tuple[int, float, Sequence[float], int]:
        reply = self.ask(f"{OTHER_MODE.get(mode, mode)} {seconds}")
        latencies = array("d", (us / 1e6 for us in reply["latencies_us"]))
        for error, count in reply.get("errors", {}).items():
            self.errors[error] = self.errors.get(error, 0) + count
        return reply["messages"], reply["seconds"], latencies, reply["failed"]

    def take_errors(self) -> dict[str, int]:
        errors, self.errors = self.errors, {}
        return errors


# (namesrv, topic, warmup seconds, concurrency) -> the other side, started
SideFactory = Callable[[str, str, float, int], LineSide]


def java_side(namesrv: str, topic: str, warmup: float, concurrency: int) -> LineSide:
    """ProduceWindows.java on the cached RocketMQ jars."""
    from rocketmq_actors.testing.java import java_argv

    scratch = Path(tempfile.mkdtemp(prefix="rocketmq-actors-java-"))
    argv = java_argv(JAVA_DIR / "ProduceWindows.java", namesrv, topic, warmup, concurrency,
                     scratch=scratch, heap_mb=512)  # fmt: skip
    return LineSide("ProduceWindows.java", argv, scratch)


class _Usage:
    """CPU use around one window: the measured client's CPU seconds and the machine's idle."""

    def __init__(self, client_cpu: Callable[[], float | None]) -> None:
        self._client_cpu = client_cpu
        self._cpu = client_cpu()
        self._ticks = machine_ticks()

    def end(self) -> tuple[float | None, tuple[int, int] | None]:
        cpu, ticks = self._client_cpu(), machine_ticks()
        used = cpu - self._cpu if cpu is not None and self._cpu is not None else None
        idle = (
            (ticks[0] - self._ticks[0], ticks[1] - self._ticks[1])
            if ticks is not None and self._ticks is not None
            else None
        )
        return used, idle


class _Tally:
    """One side's windows of one path, pooled."""

    def __init__(self) -> None:
        self.messages = 0
        self.seconds = 0.0
        self.latencies = array("d")  # (not a list: see benchmarks.producer.Latencies)
        self.failed = 0
        self.cpu_s: float | None = 0.0
        self.idle: tuple[int, int] | None = (0, 0)

    def add(  # noqa: PLR0917
        self,
        messages: int,
        seconds: float,
        latencies: Sequence[float],
        failed: int,
        cpu_s: float | None,
        idle: tuple[int, int] | None,
    ) -> None:
        self.messages += messages
        self.seconds += seconds
        self.latencies.extend(latencies)
        self.failed += failed
        self.cpu_s = self.cpu_s + cpu_s if self.cpu_s is not None and cpu_s is not None else None
        self.idle = (
            (self.idle[0] + idle[0], self.idle[1] + idle[1])
            if self.idle is not None and idle is not None
            else None
        )

    def summary(self) -> dict[str, Any]:
        return {
            "msgs_per_s": round(self.messages / self.seconds) if self.seconds else 0,
            "messages": self.messages,
            "seconds": round(self.seconds, 2),
            "failed": self.failed,
            **percentiles(self.latencies),
            # the client process's CPU (all its threads; the JVM's JIT and GC included) and
            # the share of the machine left idle: a side bound by round trips leaves CPU idle
            "client_cpu_us_per_msg": (
                round(self.cpu_s / self.messages * 1e6, 2)
                if self.cpu_s is not None and self.messages
                else None
            ),
            "machine_idle_pct": (
                round(self.idle[0] / self.idle[1] * 100, 1)
                if self.idle is not None and self.idle[1]
                else None
            ),
        }


async def paired(  # noqa: PLR0917 - positional for anyio.run
    namesrv: str,
    windows: int,
    seconds: float,
    warmup: float,
    concurrency: int,
    topic: str | None = None,
    modes: tuple[str, ...] = tuple(MODES),
    other: SideFactory = java_side,
    other_name: str = "java",
    observe: Callable[[int], Callable[[int], dict[str, Any]]] | None = None,
) -> dict[str, Any]:
    """``windows`` windows per path and side, alternating sides; pooled and per-window
    figures of each. Ours and the other side (the Java client unless told) send to the same
    topic; the other side's figures are under ``other_name``. ``observe``, called before each
    window with the measured client's process id, returns what to call after it with the
    window's messages: its fields go into the window's record
    (``benchmarks.rotation.Observer``)."""
    topic = topic or f"bench_paired_{int(time.time())}"
    figures: dict[str, Any] = {}
    async with AsyncExitStack() as stack:
        producer = await stack.enter_async_context(
            Producer(
                namesrv=namesrv, group="bench_paired", options=ProducerOptions(max_pending=100_000)
            )
        )
        nowait = producer  # (replaced below when the mode runs: submit's window)
        if "nowait" in modes:
            nowait = await stack.enter_async_context(
                Producer(
                    namesrv=namesrv,
                    group="bench_paired_nowait",
                    options=ProducerOptions(max_pending=concurrency),
                )
            )
        batching: dict[str, Producer] = {}  # auto-batching: the same two ways, a producer each
        for mode, pending in (("autobatch", 100_000), ("autobatch_nowait", concurrency)):
            if mode in modes:
                options = ProducerOptions(auto_batch=True, max_pending=pending)
                batching[mode] = await stack.enter_async_context(
                    Producer(namesrv=namesrv, group=f"bench_paired_{mode}", options=options)
                )
        await create_topic(producer.instance, topic, queues=QUEUES)
        other_side = other(namesrv, topic, warmup, concurrency)
        try:
            await anyio.to_thread.run_sync(other_side.ready)  # its warm-up, alone on the machine
            await window(producer, topic, concurrency, warmup, 1)  # then ours, alone

            async def ours(
                mode: str, length: float = seconds
            ) -> tuple[int, float, Sequence[float], int]:
                if mode == "nowait":
                    return await nowait_window(nowait, topic, length)
                if mode == "autobatch_nowait":
                    return await nowait_window(batching[mode], topic, length)
                senders, batch = {"sync": (1, 1), "pipelined": (concurrency, 1),
                                  "autobatch": (concurrency, 1),
                                  "batch": (max(1, concurrency // 16), 16)}[mode]  # fmt: skip
                sender = batching.get(mode, producer)
                return (*await window(sender, topic, senders, length, batch), 0)

            for mode in modes:
                name = MODES[mode]
                # an unmeasured warm-up of this path first, each side: the JVM's JIT needs
                # more than one short window (without it, Java's first measured batch windows
                # ran well below its later ones)
                await ours(mode, warmup)
                await anyio.to_thread.run_sync(other_side.window, mode, warmup)
                other_side.take_errors()  # (the warm-ups' are not counted)
                pooled = {"ours": _Tally(), other_name: _Tally()}
                per_window: list[dict[str, Any]] = []
                for side in alternating(windows, "ours", other_name):
                    pid = os.getpid() if side == "ours" else other_side.pid
                    observed = observe(pid) if observe is not None else None
                    if side == "ours":
                        usage = _Usage(time.process_time)
                        got = await ours(mode)
                    else:
                        usage = _Usage(other_side.cpu_s)
                        got = await anyio.to_thread.run_sync(other_side.window, mode, seconds)
                    used = usage.end()
                    pooled[side].add(*got, *used)
                    one = _Tally()
                    one.add(*got, *used)
                    extra = observed(got[0]) if observed is not None else {}
                    per_window.append({"side": side, **one.summary(), **extra})
                figures[name] = {side: tally.summary() for side, tally in pooled.items()}
                figures[name][other_name]["errors"] = other_side.take_errors()
                figures[name]["windows"] = per_window
        finally:
            await anyio.to_thread.run_sync(other_side.close)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--windows", type=int, default=6, help="windows per path and side")
    parser.add_argument("--seconds", type=float, default=3.0, help="length of one window")
    parser.add_argument("--warmup", type=float, default=10.0)
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--modes", default=",".join(MODES), help="a subset of " + ",".join(MODES))
    parser.add_argument("--namesrv", help="use this cluster instead of starting one")
    parser.add_argument("--out", type=Path, default=RESULTS / "paired.json")
    args = parser.parse_args(argv)
    modes = tuple(args.modes.split(","))
    if not set(modes) <= set(MODES):
        parser.error(f"--modes: choose from {','.join(MODES)}")

    def measure(namesrv: str) -> dict[str, Any]:
        return anyio.run(paired, namesrv, args.windows, args.seconds, args.warmup,
                         args.concurrency, None, modes)  # fmt: skip

    write_results(args.out, on_cluster(args.namesrv, measure))
    return 0


if __name__ == "__main__":
    raise SystemExit(run_main(main))
