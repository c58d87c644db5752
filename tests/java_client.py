"""The Java client beside ours in a test: ``tests/java/JavaClient.java`` run on the cached jars
(see that file for its modes and what they print)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import attrs
from anyio.abc import Process

from rocketmq_actors.testing.java import java_argv, java_scratch, run_java

SOURCE = Path(__file__).resolve().parent / "java" / "JavaClient.java"


def body(i: int, size: int) -> bytes:
    """What JavaClient.body(i, size) sends: ``k<i>;`` repeated, cut to ``size`` bytes."""
    unit = b"k%d;" % i
    return (unit * (size // len(unit) + 1))[:size]


async def java(*args: object, timeout: float = 120) -> list[dict[str, Any]]:
    """Run one JavaClient mode to its end (in a worker thread); its JSON lines."""
    with anyio.fail_after(timeout):
        return await anyio.to_thread.run_sync(
            lambda: run_java(SOURCE, *args, timeout=timeout), abandon_on_cancel=True
        )


@attrs.define
class JavaMember:
    """A running ``member`` mode: what it consumed so far, and a signal on each message."""

    process: Process
    messages: list[dict[str, Any]] = attrs.field(factory=list)
    arrived: anyio.Event = attrs.field(factory=anyio.Event)

    async def _read(self, ready: anyio.Event) -> None:
        assert self.process.stdout is not None
        buffer = b""
        async for chunk in self.process.stdout:
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                if not line.startswith(b"{"):
                    continue
                record = json.loads(line)
                if record.get("ready"):
                    ready.set()
                elif "key" in record:
                    self.messages.append(record)
                    self.arrived.set()
                    self.arrived = anyio.Event()


@asynccontextmanager
async def java_member(
    namesrv: str, topic: str, group: str, *, broker_rebalance: bool = False
) -> AsyncIterator[JavaMember]:
    """A Java DefaultMQPushConsumer in ``group``, started (its ``start()`` returned) on entry
    and shut down on exit; ``broker_rebalance``: ``setClientRebalance(false)``."""
    with java_scratch() as scratch:
        mode = ["BROKER"] if broker_rebalance else []
        argv = java_argv(SOURCE, "member", namesrv, topic, group, *mode, scratch=scratch)
        async with await anyio.open_process(argv) as process, anyio.create_task_group() as tg:
            member = JavaMember(process)
            ready = anyio.Event()
            tg.start_soon(member._read, ready)
            try:
                with anyio.fail_after(60):
                    await ready.wait()
                yield member
            finally:
                assert process.stdin is not None
                await process.stdin.aclose()  # the member shuts down and exits
                with anyio.move_on_after(30, shield=True):
                    await process.wait()
                if process.returncode is None:
                    process.kill()
