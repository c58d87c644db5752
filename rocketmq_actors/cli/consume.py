"""``rocketmq-actors consume``: receive messages of a topic as a group member.

``--count N`` alone (no ``--handler``, ``--orderly`` or ``--follow``) consumes and commits
exactly N messages: it pulls as a group member without auto-commit and commits, per queue,
the offset after the last message it took - more may have been fetched, none of those is
committed. (The push path commits what its handlers finished, which can be more than N.)

With ``--handler package.module:function`` it is a consumer daemon: every message goes to your
function (``async def f(message)``, or a plain ``def`` run in a worker thread); raising means
"consume later" (retried, then dead-lettered). SIGTERM/SIGINT stop it gracefully: pulling
stops, handlers in flight finish, offsets are committed, the summary is printed; the exit
status is then 0 with ``--follow`` (a signal is how a follow ends) and 128 + the signal
(130, 143) without it (the run was cut short).
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import os
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any, cast

import anyio

from rocketmq_actors.consumer.pull import OffsetReset, PullConsumer, PullOptions
from rocketmq_actors.consumer.push import ConsumeFrom, PushConsumer, PushOptions
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.records import MessageExt

from .common import STATE, add_namesrv
from .formatting import add_format_flag, check_format, render
from .progress import ProgressReport, add_progress_flag

UserHandler = Callable[[MessageExt], Awaitable[None]]


def load_handler(spec: str) -> UserHandler:
    """``package.module:function`` -> an async handler; ``ValueError`` says what is wrong."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ValueError(f"--handler {spec!r}: expected package.module:function")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"--handler {spec!r}: cannot import {module_name!r}: {exc}") from None
    target: Any = module
    for part in attr.split("."):
        target = getattr(target, part, None)
        if target is None:
            raise ValueError(f"--handler {spec!r}: {module_name!r} has no {attr!r}")
    if not callable(target):
        raise ValueError(f"--handler {spec!r}: {attr!r} is not callable")
    if inspect.iscoroutinefunction(target):
        return cast(UserHandler, target)
    function = target

    async def in_thread(message: MessageExt) -> None:
        await anyio.to_thread.run_sync(function, message)

    return in_thread


async def consume(args: argparse.Namespace) -> dict[str, Any]:
    user = load_handler(args.handler_spec) if args.handler_spec else None
    received = 0
    ids: set[str] = set()
    arrived = anyio.Event()
    enough = anyio.Event()
    window = Window()

    async def handle(message: MessageExt) -> None:
        nonlocal received, arrived
        window.message()
        received += 1
        ids.add(message.msg_id)
        bar.advance()
        if args.print:
            sys.stdout.write(printed(args, message))
        if user is not None:
            await user(message)  # raising: retried like any handler failure
        arrived.set()
        arrived = anyio.Event()
        if args.count and len(ids) >= args.count:
            enough.set()

    consume_from, timestamp = ConsumeFrom.LAST_OFFSET, None
    if args.from_first:
        consume_from = ConsumeFrom.FIRST_OFFSET
    elif args.from_timestamp is not None:
        consume_from, timestamp = ConsumeFrom.TIMESTAMP, args.from_timestamp
    started = time.monotonic()
    bar = ProgressReport(
        "received", total=args.count or None, enabled=args.progress and not args.json
    )
    # installed before the consumer starts: a signal can never find the default handler
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals, bar:
        client = PushConsumer(
            group=args.group, subscriptions={args.topic: args.tags}, handler=handle,
            namesrv=args.namesrv,
            options=PushOptions(consume_from=consume_from, consume_timestamp_ms=timestamp,
                                orderly=args.orderly),
        )  # fmt: skip
        STATE.client_started = True
        # (from the start on, as the --count path's: with a backlog the first pull can bring
        # every message before the start returns, and a window of one instant has no rate)
        window.ready()
        async with client, anyio.create_task_group() as tg:

            async def stop_on_signal() -> None:
                async for signum in signals:
                    args.stopped_by = signum
                    enough.set()  # graceful: offsets are persisted on the way out
                    return

            async def stop_when_idle() -> None:
                while not args.follow:
                    with anyio.move_on_after(args.idle) as idle:
                        await arrived.wait()
                    if idle.cancelled_caught:
                        enough.set()
                        return

            tg.start_soon(stop_on_signal)
            tg.start_soon(stop_when_idle)
            await enough.wait()
            tg.cancel_scope.cancel()
    return summary(args, received, len(ids), started, window)


class Window:
    """The consuming time: from the consumer's start (or an earlier first message) to the
    last message - without the start-up before it or the final idle wait after it."""

    def __init__(self) -> None:
        self.start: float | None = None
        self.last: float | None = None

    def ready(self) -> None:
        if self.start is None:  # else a message came during the start
            self.start = time.monotonic()

    def message(self) -> None:
        self.last = time.monotonic()
        self.start = self.start if self.start is not None else self.last

    def seconds(self) -> float:
        if self.start is None or self.last is None:
            return 0.0
        return self.last - self.start


def summary(
    args: argparse.Namespace, received: int, unique: int, started: float, window: Window
) -> dict[str, Any]:
    """``msgs_per_s`` is ``received / consuming_seconds``, both stated (``seconds`` is the
    whole run: start-up and the final idle wait included)."""
    now = time.monotonic()
    # rounded first, so that msgs_per_s is exactly received / the consuming_seconds printed
    consuming = round(window.seconds(), 3)
    return {
        "topic": args.topic,
        "group": args.group,
        "received": received,
        "unique": unique,
        "seconds": round(now - started, 3),
        "consuming_seconds": consuming,
        "msgs_per_s": round(received / consuming, 1) if received and consuming > 0 else 0.0,
    }


def exact(args: argparse.Namespace) -> bool:
    """Whether ``--count`` takes the pull path that commits exactly N."""
    return bool(args.count) and not (args.handler_spec or args.orderly or args.follow)


async def _seek_new_queues(consumer: PullConsumer, timestamp_ms: int) -> None:
    """--from-timestamp: a queue the group never committed starts at that time."""
    for queue in consumer.assignment():
        if await consumer.committed(queue) is None:
            consumer.seek(queue, await consumer.offset_for_time(queue, timestamp_ms))


async def consume_exactly(args: argparse.Namespace) -> dict[str, Any]:
    """Take ``args.count`` messages and commit exactly them (see the module docstring)."""
    started = time.monotonic()
    window = Window()
    taken: dict[MessageQueue, int] = {}  # queue -> offset after the last message taken
    received = 0
    reset = OffsetReset.EARLIEST if args.from_first else OffsetReset.LATEST
    bar = ProgressReport("received", total=args.count, enabled=args.progress and not args.json)
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals, bar:
        client = PullConsumer(
            group=args.group, namesrv=args.namesrv,
            options=PullOptions(auto_commit=False, auto_offset_reset=reset),
        )  # fmt: skip
        STATE.client_started = True
        async with client as consumer:
            work = anyio.CancelScope()

            async def stop_on_signal() -> None:
                async for signum in signals:
                    args.stopped_by = signum
                    work.cancel()  # graceful: what was taken is still committed
                    return

            async with anyio.create_task_group() as tg:
                tg.start_soon(stop_on_signal)
                with work:
                    window.ready()  # joining the topic's queues is part of consuming
                    await consumer.subscribe({args.topic: args.tags})
                    if args.from_timestamp is not None:
                        await _seek_new_queues(consumer, args.from_timestamp)
                    while received < args.count:
                        batch = await consumer.getmany(
                            max_records=args.count - received, timeout=args.idle
                        )
                        if not batch:
                            break  # idle: nothing came for --idle seconds
                        for queue, records in batch.items():
                            for message in records[: args.count - received]:
                                received += 1
                                window.message()
                                taken[queue] = message.queue_offset + 1
                                bar.advance()
                                if args.print:
                                    sys.stdout.write(printed(args, message))
                tg.cancel_scope.cancel()
            if taken:  # exactly what was taken, per queue
                await consumer.commit(taken)
    return summary(args, received, received, started, window)


def printed(args: argparse.Namespace, message: MessageExt) -> str:
    """What ``--print`` writes of a message: its body and a newline, or ``--format``'s."""
    if args.format is not None:
        return render(args.format, message)
    return message.body.decode(errors="replace") + "\n"


def _run(args: argparse.Namespace) -> int:
    if args.count < 0 or args.idle <= 0:
        raise ValueError("--count must be >= 0 and --idle > 0")
    if args.format is not None:
        check_format(args.format)
        args.print = True
    if args.handler_spec:
        sys.path.insert(0, os.getcwd())  # like python -m: modules next to you are found
        load_handler(args.handler_spec)  # a bad spec fails now, before connecting
    args.stopped_by = None
    result = anyio.run(consume_exactly if exact(args) else consume, args)
    if args.json:
        sys.stdout.write(json.dumps(result) + "\n")
    else:
        sys.stderr.write(f"received {result['received']} ({result['unique']} unique)\n")
    return interrupted_status(args)


def interrupted_status(args: argparse.Namespace) -> int:
    """0, or 128 + the signal that cut a bounded run short (130 for SIGINT, as a shell's
    interrupted command). With ``--follow`` a signal is how the run ends (as ``kcat``'s
    follow): 0. Either way the stop was graceful and the summary printed."""
    if args.stopped_by is None or args.follow:
        return 0
    return 128 + int(args.stopped_by)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("consume", help="receive messages as a member of a consumer group")
    add_namesrv(p)
    p.add_argument("--topic", required=True)
    p.add_argument("--group", required=True, help="consumer group")
    p.add_argument("--tags", default="*", help="tag expression, e.g. 'a || b' (default *)")
    p.add_argument(
        "--count",
        type=int,
        default=0,
        help="consume and commit exactly N messages, then stop (with --handler, --orderly or "
        "--follow: stop after N distinct messages; more may be committed)",
    )
    start = p.add_mutually_exclusive_group()
    start.add_argument("--from-first", action="store_true", help="a new group starts at the oldest")
    start.add_argument(
        "--from-last", action="store_true", help="a new group starts at the newest (default)"
    )
    start.add_argument(
        "--from-timestamp", type=int, metavar="MS", help="a new group starts at this time"
    )
    p.add_argument("--follow", action="store_true", help="keep consuming until SIGINT/SIGTERM")
    p.add_argument(
        "--idle",
        type=float,
        default=10.0,
        help="without --follow: stop after this many idle seconds",
    )
    p.add_argument("--print", action="store_true", help="print each body on stdout")
    add_format_flag(p, "implies --print")
    p.add_argument(
        "--handler",
        dest="handler_spec",
        metavar="MODULE:FUNCTION",
        help="run this function on every message (a consumer daemon; use with --follow)",
    )
    p.add_argument("--orderly", action="store_true", help="consume each queue in order")
    add_progress_flag(p)
    p.add_argument("--json", action="store_true", help="end with one JSON line of figures")
    p.set_defaults(handler=_run)
