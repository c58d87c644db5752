"""PullCounter: each pull goes to the node the previous answer suggested."""

from __future__ import annotations

import time
from typing import Any

import anyio
import pytest

from rocketmq_actors.consumer.core import brokercalls
from rocketmq_actors.consumer.core.brokercalls import PullCounter, PullResult, PullStatus
from rocketmq_actors.errors import RequestTimeout
from rocketmq_actors.protocol.bodies import MessageQueue
from tests.slack import slack

QUEUE = MessageQueue("t", "b", 0)


async def test_the_next_pull_goes_where_the_last_answer_said(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    nodes: list[int] = []
    answers = iter([1, 1, 0])  # the broker suggests the slave twice, then the master

    async def pull_once(*args: Any, broker_id: int = 0, **kwargs: Any) -> PullResult:
        nodes.append(broker_id)
        if len(nodes) == 3:
            raise RequestTimeout("x", 11, 1.0)  # a failed pull keeps the suggestion
        return PullResult(PullStatus.NO_NEW_MSG, 0, 0, 0, (), next(answers))

    class Owner:
        instance = group = None
        pull_batch_size, pull_suspend, request_timeout, sub_version = 32, 0.0, 1.0, 0
        max_body_size = 4 * 1024 * 1024

        def subscription(self, topic: str) -> None:
            return None

    monkeypatch.setattr(brokercalls, "pull_once", pull_once)
    counter = PullCounter(0.001)
    for _ in range(4):
        await counter.pull(Owner(), QUEUE, 0)  # type: ignore[arg-type]
    assert nodes == [0, 1, 1, 1]
    assert (counter.pulls, counter.errors, counter.node) == (3, 1, 0)  # told: the master


def _bombs(kind: str) -> bytes:
    """A pull's worth (32 records) of bodies of 16 MiB of zeros each, compressed by ``kind``
    (zstd streamed, as Java writes it: no size in the frame)."""
    import zlib

    import lz4.frame
    import zstandard

    from rocketmq_actors.protocol.messages import MessageSysFlag
    from rocketmq_actors.testing.stored import encode_stored

    zeros = bytes(16 * 1024 * 1024)
    if kind == "zlib":
        body, bits = zlib.compress(zeros, 9), MessageSysFlag.COMPRESSION_ZLIB
    elif kind == "lz4":
        body, bits = lz4.frame.compress(zeros), MessageSysFlag.COMPRESSION_LZ4
    else:
        streamed = zstandard.ZstdCompressor().compressobj()
        body = streamed.compress(zeros) + streamed.flush()
        bits = MessageSysFlag.COMPRESSION_ZSTD
    return b"".join(
        encode_stored(
            topic="bombs", body=body, queue_offset=i, sys_flag=MessageSysFlag.COMPRESSED | bits
        )
        for i in range(32)
    )


@pytest.mark.parametrize("kind", ["zlib", "lz4", "zstd"])
async def test_a_pull_of_bombs_inflates_off_the_event_loop(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 43: 32 records that inflate to 16 MiB each, the consumer's limit 4 MiB. Each is
    undecodable (the poison path), and no inflation runs in the event loop's thread (each
    call of the decompressor is watched); meanwhile the loop keeps answering a probe that
    wakes every 5 ms. (zlib's inflation is the slow one: on the event loop it held the probe
    for most of a second. The probe's bound has slack for a loaded machine, whose scheduler
    alone can hold a thread a tenth of a second: the thread check is the exact one.)"""
    import threading

    from rocketmq_actors.consumer.core.brokercalls import RawPull, decode_pull_off_loop
    from rocketmq_actors.consumer.core.subscriptions import Subscription
    from rocketmq_actors.protocol import compression

    loop_thread = threading.get_ident()
    inflated_in: list[int] = []
    decompress = compression.decompress

    def watched(body: bytes, sys_flag: int, limit: int) -> bytes:
        inflated_in.append(threading.get_ident())
        return decompress(body, sys_flag, limit)

    monkeypatch.setattr(compression, "decompress", watched)
    raw = RawPull(PullStatus.FOUND, 32, 0, 32, _bombs(kind))
    queue = MessageQueue("bombs", "broker-a", 0)
    late = 0.0
    done = False

    async def probe() -> None:
        nonlocal late
        while not done:
            before = anyio.current_time()
            await anyio.sleep(0.005)
            late = max(late, anyio.current_time() - before - 0.005)

    began = time.monotonic()
    async with anyio.create_task_group() as tg:
        tg.start_soon(probe)
        await anyio.sleep(0.02)  # (the probe runs)
        result = await decode_pull_off_loop(raw, queue, Subscription("bombs"), 4 * 1024 * 1024)
        done = True
    assert len(result.messages) == 32
    assert all("past 4194304 bytes" in (m.decode_error or "") for m in result.messages)
    assert len(inflated_in) == 32 and loop_thread not in inflated_in
    # (plus twice the worst scheduling delay the machine showed meanwhile: a busy machine)
    assert late < 0.3 + slack(began, wakeups=2, floor=0.0), f"the loop was held {late:.3f} s"


MIB = 1024 * 1024


def _inflating(sizes: list[int]) -> bytes:
    """Records whose zlib bodies inflate to ``sizes`` bytes each (offsets 10, 11, ...); a
    size past 4 MiB is a bomb for a consumer's default ``max_body_size``."""
    import zlib

    from rocketmq_actors.protocol.messages import MessageSysFlag
    from rocketmq_actors.testing.stored import encode_stored

    bits = MessageSysFlag.COMPRESSED | MessageSysFlag.COMPRESSION_ZLIB
    bodies = [zlib.compress(bytes([i]) * size) for i, size in enumerate(sizes)]
    return b"".join(
        encode_stored(topic="t", body=body, queue_offset=10 + i, sys_flag=bits)
        for i, body in enumerate(bodies)
    )


@pytest.mark.parametrize(
    ("sizes", "budget", "kept", "next_offset"),
    [
        ([MIB] * 4, None, 4, 14),  # no budget (a pull consumer's): every record
        ([MIB] * 4, 5 * MIB // 2, 2, 12),  # the third would go past 2.5 MiB: left for later
        ([MIB] * 4, 3 * MIB, 3, 13),  # exactly the room
        ([MIB] * 4, 0, 1, 11),  # no room: the first still (a queue always moves on)
        ([8 * MIB, MIB], 2 * MIB, 2, 12),  # a bomb: undecodable at 4 MiB, takes no room
    ],
)
async def test_compressed_bodies_inflate_into_the_room_the_cache_has_left(
    sizes: list[int], budget: int | None, kept: int, next_offset: int
) -> None:
    """Issue 43: what a pull inflates counts against the consumer's cache before it is
    allocated. The records from the first that would go past the room are not inflated; the
    pull's next offset is theirs, so the queue's next pull reads them again."""
    from rocketmq_actors.consumer.core.brokercalls import RawPull, decode_pull_off_loop
    from rocketmq_actors.consumer.core.subscriptions import Subscription

    raw = RawPull(PullStatus.FOUND, 10 + len(sizes), 0, 100, _inflating(sizes))
    room = None if budget is None else (lambda: budget)  # (asked only for compressed records)
    result = await decode_pull_off_loop(raw, QUEUE, Subscription("t"), 4 * MIB, room)
    assert [m.queue_offset for m in result.messages] == list(range(10, 10 + kept))
    assert result.next_offset == next_offset
    for message, size in zip(result.messages, sizes, strict=False):
        if size > 4 * MIB:
            assert "past 4194304 bytes" in (message.decode_error or "")
        else:
            assert message.decode_error is None and len(message.body) == size
