"""The least one Python thread pays a message on two paths: what a pure-Python client cannot go
below on this machine, set beside the Java client's rates on the same paths.

    python -m benchmarks.floor [--messages 400000] [--rounds 5]

No client runs here: each path is its essential work a message, written out on asyncio as
leanly as we know how, with nothing a client adds around it (no network, no flow control, no
timeouts, no errors). Each path runs on the stock asyncio loop and on uvloop (when installed).

- ``e_autobatch_1k``: 256 tasks, each awaiting a future of its own per send. A send's record
  (head, 1 KiB body, a constant start of its properties) joins the open batch's list; every 31
  records (a 32 KiB batch, Java's default ``batchMaxBytes``) a completer task names the batch's
  messages with one id step, joins the records into one ``bytes`` and resolves each future with
  a result object of its own (a slotted class of four fields). No frame is written or read and
  no answer decoded.
- ``d_consume``: pull bodies of 32 stored 1 KiB messages (as a broker sends them) are decoded by
  this package's own decoder (``protocol.records.decode_records``, the fastest we have), and
  each message is awaited through an async handler that counts it, from one task, noting its
  queue's offset. No network, no process queue, no worker tasks, no settlement.

Each round is a fresh event loop; its figure is this process's CPU time a message (one thread).
Per path and loop the rounds' lowest and median are kept; a path's floor is its lowest on
either loop, with the rate one thread reaches at it (1e6 / us). Beside each path: the Java
client's rate and CPU a message in the newest ``nullbroker.json`` run, and the CPU a message
at which one thread reaches that rate. ``floor_above_it`` says the floor is above that by more
than ``MARGIN`` (the two were measured at different times of the machine): then no one-thread
Python client reaches Java's rate on that path here, whatever it does above the floor.
Results: ``benchmarks/results/floor.json``, with the load average and a calibration.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import itertools
import os
import statistics
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

from rocketmq_actors.consumer.core.message import ReceivedMessage
from rocketmq_actors.extras import uvloop_options
from rocketmq_actors.producer.autobatch import _HEAD, _PLAIN_OVERHEAD, _PLAIN_TAIL
from rocketmq_actors.protocol.records import decode_records
from rocketmq_actors.testing.stored import encode_stored

from .common import RESULTS, calibration_us, run_main, write_results
from .docs_null import load

BODY = b"x" * 1024
TASKS = 256
BATCH = 31  # 1 KiB records in a 32 KiB batch
PULL = 32  # messages a pull body (the Java client's pullBatchSize)
_PREFIX = "7F00000100010A0B0C0D000102"  # (an id: this, the batch's counter, its index)


class _Result:
    __slots__ = ("msg_id", "queue", "queue_offset", "status")

    def __init__(self, msg_id: str, queue: str, queue_offset: int, status: str) -> None:
        self.msg_id = msg_id
        self.queue = queue
        self.queue_offset = queue_offset
        self.status = status


async def autobatch_round(messages: int) -> float:
    """CPU seconds a message of awaited sends joined into batches of ``BATCH``."""
    loop = asyncio.get_running_loop()
    futures: list[asyncio.Future[_Result]] = []
    parts: list[bytes | None] = []
    full = asyncio.Event()
    counter = itertools.count()
    admitted = settled = frames = 0
    size = len(BODY)

    async def caller() -> None:
        nonlocal admitted, settled
        while admitted < messages:
            admitted += 1
            future = loop.create_future()
            parts.extend((_HEAD(_PLAIN_OVERHEAD + size, 0, 0, 0, size), BODY, _PLAIN_TAIL, None))
            futures.append(future)
            if len(futures) >= BATCH or admitted == messages:  # (the last: a short batch)
                full.set()
            await future
            settled += 1

    async def completer() -> None:
        nonlocal frames
        while True:
            await full.wait()
            full.clear()
            while futures and (len(futures) >= BATCH or admitted == messages):
                batch = futures[:BATCH]
                records = parts[: 4 * len(batch)]
                del futures[:BATCH], parts[: 4 * len(batch)]
                number = next(counter)  # (one id step a batch: a prefix and a counter)
                ids = [f"{_PREFIX}{number & 0xFFFF:04X}{i:02X}" for i in range(len(batch))]
                records[3::4] = [f"{msg_id}\x02".encode() for msg_id in ids]
                frames += len(b"".join(records))  # type: ignore[arg-type]
                for index, future in enumerate(batch):
                    future.set_result(_Result(ids[index], "q", index, "SEND_OK"))

    began = time.process_time()
    completing = asyncio.ensure_future(completer())
    calling = asyncio.gather(*(caller() for _ in range(TASKS)))
    await asyncio.wait((calling, completing), return_when=asyncio.FIRST_COMPLETED)
    if completing.done():  # (it never ends by itself: it failed)
        calling.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await calling
        completing.result()
    completing.cancel()
    calling.result()  # (a caller that failed fails the round)
    return (time.process_time() - began) / settled


def _pull_bodies() -> list[bytes]:
    """A pull body of ``PULL`` stored messages for each of eight queues."""
    props = {"UNIQ_KEY": f"{_PREFIX}0000", "TAGS": "a"}

    def stored(queue: int, n: int) -> bytes:
        return encode_stored(topic="bench_topic", body=BODY, properties=props, queue_id=queue,
                             queue_offset=n, commit_log_offset=n * 1100)  # fmt: skip

    return [b"".join(stored(queue, n) for n in range(PULL)) for queue in range(8)]


async def consume_round(messages: int) -> float:
    """CPU seconds a message of pull bodies decoded and handed to a handler one by one."""
    bodies = _pull_bodies()
    handled = 0
    offsets: dict[int, int] = {}

    async def handler(message: ReceivedMessage) -> None:
        nonlocal handled
        handled += 1

    began = time.process_time()
    for pulled in itertools.cycle(bodies):
        for message in decode_records(pulled, ReceivedMessage, strict=False):
            await handler(message)
            offsets[message.queue_id] = message.queue_offset
        if handled >= messages:
            break
        await asyncio.sleep(0)  # (a pull's turn of the loop)
    return (time.process_time() - began) / handled


Round = Callable[[int], Awaitable[float]]
ROUNDS: dict[str, Round] = {"e_autobatch_1k": autobatch_round, "d_consume": consume_round}
#: how far a floor must be above the CPU Java's rate needs to count as above it: the two come
#: from runs at different times, whose calibrations on this machine differ by as much
MARGIN = 0.15


def _java(path: str) -> dict[str, Any]:
    """Java's rate and CPU a message on ``path`` in the newest nullbroker.json run."""
    try:
        row = load("nullbroker")["paths"][path]
    except (OSError, KeyError, ValueError):
        return {}
    return {"run_id": row["run_id"], "msgs_per_s": row["java"],
            "cpu_us_per_msg": row["cpu_us_per_msg_java"]}  # fmt: skip


def _loops() -> list[str]:
    """The event loops to measure on: asyncio's own, and uvloop when it is installed."""
    return ["asyncio", "uvloop"] if importlib.util.find_spec("uvloop") else ["asyncio"]


def _rounds(round_of: Round, messages: int, rounds: int, loop: str) -> list[float]:
    """CPU us a message of ``rounds`` rounds on ``loop``, lowest first (after a warm-up)."""
    options = uvloop_options(loop == "uvloop")
    anyio.run(round_of, max(messages // 10, 1), backend_options=options)  # (warm: allocator)
    return sorted(anyio.run(round_of, messages, backend_options=options) * 1e6
                  for _ in range(rounds))  # fmt: skip


def measure(messages: int, rounds: int) -> dict[str, Any]:
    paths: dict[str, Any] = {}
    for path, round_of in ROUNDS.items():
        by_loop = {loop: _rounds(round_of, messages, rounds, loop) for loop in _loops()}
        floor = min(cpu[0] for cpu in by_loop.values())
        row: dict[str, Any] = {
            "floor_cpu_us_per_msg": round(floor, 3),
            "one_thread_msgs_per_s": round(1e6 / floor),
            "loops": {
                loop: {"lowest_cpu_us_per_msg": round(cpu[0], 3),
                       "median_cpu_us_per_msg": round(statistics.median(cpu), 3),
                       "rounds_cpu_us_per_msg": [round(c, 3) for c in cpu]}
                for loop, cpu in by_loop.items()
            },
        }  # fmt: skip
        java = _java(path)
        if java:
            needed = 1e6 / java["msgs_per_s"]
            row["java"] = java
            row["cpu_us_per_msg_for_java_rate"] = round(needed, 3)
            row["floor_above_it"] = floor > needed * (1 + MARGIN)
        paths[path] = row
    return paths


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"at least 1, not {value}")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=_positive, default=400_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", type=Path, default=RESULTS / "floor.json")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()[0]
    calibration = calibration_us()
    paths = measure(args.messages, args.rounds)
    write_results(args.out, {
        "settings": {"messages": args.messages, "rounds": args.rounds, "tasks": TASKS,
                     "batch": BATCH, "pull": PULL, "loops": _loops(), "margin": MARGIN},
        "load_1m": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "calibration_us": calibration,
        "paths": paths,
    })  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(run_main(main))
