"""Poison input never kills a loop: messages that cannot be decoded go to the DLQ, the rest of
the queue is consumed, nothing stalls (real broker)."""

from __future__ import annotations

import zlib

import anyio
import attrs
import lz4.frame
import pytest
import zstandard

from rocketmq_actors.consumer.pull import PullConsumer, PullStatus
from rocketmq_actors.consumer.push import ConsumeFrom, PushConsumer, PushOptions
from rocketmq_actors.producer import Message, Producer, create_topic
from rocketmq_actors.producer.sendloop import ROUND_ROBIN
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.messages import MessageSysFlag
from rocketmq_actors.protocol.records import MessageExt

from ..routes import registered_route

pytestmark = pytest.mark.integration

COMPRESSED = MessageSysFlag.COMPRESSED
BOMB = 16 * 1024 * 1024


def _streamed_zstd(size: int) -> bytes:
    """``size`` zero bytes as Java's ZstdOutputStream writes them: no size in the frame."""
    compressor = zstandard.ZstdCompressor().compressobj()
    return bytes(compressor.compress(bytes(size)) + compressor.flush())


_LZ4 = lz4.frame.compress(b"lz4 body" * 100)
_ZSTD = zstandard.ZstdCompressor().compress(b"zstd body" * 100)
POISON = {
    # (body as stored, sysFlag): what a broken producer stores, or one with a compressor this
    # client does not know (bits 8-10 = 4)
    "truncated lz4": (_LZ4[: len(_LZ4) // 2], COMPRESSED | MessageSysFlag.COMPRESSION_LZ4),
    "zstd marked lz4": (_ZSTD, COMPRESSED | MessageSysFlag.COMPRESSION_LZ4),
    "corrupt zlib": (b"\x78\x9c not zlib at all", COMPRESSED | MessageSysFlag.COMPRESSION_ZLIB),
    "unknown compression": (zlib.compress(b"x" * 100), COMPRESSED | 0x400),
    # bombs: a few KiB that inflate to 16 MiB, four times the consumer's max_body_size
    "zlib bomb": (zlib.compress(bytes(BOMB), 9), COMPRESSED | MessageSysFlag.COMPRESSION_ZLIB),
    "lz4 bomb": (lz4.frame.compress(bytes(BOMB)), COMPRESSED | MessageSysFlag.COMPRESSION_LZ4),
    "zstd bomb": (_streamed_zstd(BOMB), COMPRESSED | MessageSysFlag.COMPRESSION_ZSTD),
}


async def _send_raw(producer: Producer, topic: str, key: str, body: bytes, sys_flag: int) -> None:
    """A message stored exactly as given (the producer would compress with zlib itself)."""
    prepared = producer._group.prepare(Message(topic=topic, body=b"placeholder", keys=[key]))
    prepared = attrs.evolve(prepared, body=body, sys_flag=sys_flag, size=len(body))
    await producer._group.send_prepared(prepared, ROUND_ROBIN, None)


@pytest.mark.parametrize("orderly", [False, True], ids=["concurrent", "orderly"])
async def test_undecodable_messages_go_to_the_dlq_and_the_queue_moves_on(
    orderly: bool, rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    """Concurrently, a poison message fails like a handler failure (here with
    ``max_reconsume_times=0``, so to the DLQ at once); in order, it goes to the DLQ at once
    whatever ``max_reconsume_times`` says, or it would hold the queue for ever."""
    plain = [f"plain-{i}" for i in range(3 * len(POISON))]
    async with Producer(namesrv=rocketmq_namesrv, group="G_poison_feed") as producer:
        await create_topic(producer.instance, unique_topic, queues=1)
        for i, key in enumerate(plain):
            await producer.send(Message(topic=unique_topic, body=key.encode(), keys=[key]))
            if i % 3 == 0 and i // 3 < len(POISON):  # poison between the plain ones
                name = list(POISON)[i // 3]
                await _send_raw(producer, unique_topic, name.replace(" ", "-"), *POISON[name])
    consumed: list[str] = []
    done = anyio.Event()

    async def handle(message: MessageExt) -> None:
        consumed.append(message.keys[0])
        if len(consumed) >= len(plain):
            done.set()

    async with PushConsumer(
        group=unique_group,
        subscriptions={unique_topic: "*"},
        handler=handle,
        namesrv=rocketmq_namesrv,
        options=PushOptions(consume_from=ConsumeFrom.FIRST_OFFSET, orderly=orderly,
                            max_reconsume_times=None if orderly else 0),
    ) as consumer:  # fmt: skip
        with anyio.fail_after(30):
            await done.wait()  # every plain message, poison or not around it
        assert (consumed if orderly else sorted(consumed)) == (plain if orderly else sorted(plain))
        assert consumer.failed >= len(POISON)  # each poison message failed, never handled
        assert consumer.running
    dlq_topic = f"%DLQ%{unique_group}"
    async with PullConsumer(namesrv=rocketmq_namesrv, group=unique_group + "_dlq") as reader:
        await registered_route(reader.instance, dlq_topic)
        dlq = MessageQueue(dlq_topic, "broker-a", 0)
        found: list[MessageExt] = []
        with anyio.fail_after(40):
            while len(found) < len(POISON):
                result = await reader.pull(dlq, len(found), wait=5)
                if result.status is PullStatus.FOUND:
                    found.extend(result.messages)
    assert sorted(m.keys[0] for m in found) == sorted(k.replace(" ", "-") for k in POISON)
    assert all(m.decode_error for m in found)  # stored as they came: still not decodable


async def test_bodies_that_inflate_past_the_cache_room_arrive_once_each_in_order(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    """Eight bodies of 1 MiB each, stored compressed in a few KiB and pulled together, for a
    consumer that caches 3 MiB a queue: a pull inflates what its cache has room for and the
    next pulls read the rest from there, so each arrives once, in order."""
    mib = 1024 * 1024
    keys = [f"big-{i}" for i in range(8)]
    async with Producer(namesrv=rocketmq_namesrv, group="G_poison_feed") as producer:
        await create_topic(producer.instance, unique_topic, queues=1)
        for i, key in enumerate(keys):
            body = zlib.compress(bytes([i]) * mib)
            await _send_raw(producer, unique_topic, key, body,
                            COMPRESSED | MessageSysFlag.COMPRESSION_ZLIB)  # fmt: skip
    consumed: list[tuple[str, int, int]] = []
    done = anyio.Event()

    async def handle(message: MessageExt) -> None:
        consumed.append((message.keys[0], len(message.body), message.body[0]))
        if len(consumed) >= len(keys):
            done.set()

    async with PushConsumer(
        group=unique_group, subscriptions={unique_topic: "*"}, handler=handle,
        namesrv=rocketmq_namesrv,
        options=PushOptions(consume_from=ConsumeFrom.FIRST_OFFSET, orderly=True,
                            max_cached_bytes=3 * mib),
    ) as consumer:  # fmt: skip
        with anyio.fail_after(30):
            await done.wait()
        assert consumer.failed == 0
    assert consumed == [(key, mib, i) for i, key in enumerate(keys)]
