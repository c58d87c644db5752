"""LZ4, ZSTD and zlib bodies between the Java client (5.3.3, ``setCompressType``) and ours,
through the real broker, in both directions."""

from __future__ import annotations

import zlib

import pytest

from rocketmq_actors.consumer.pull import PullConsumer, PullOptions
from rocketmq_actors.producer import Message, Producer, ProducerOptions, create_topic
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.compression import CompressionType
from rocketmq_actors.protocol.messages import MessageSysFlag

from ..java_client import body, java
from ..producer.pull import pull

# once: compression is the clients' (the broker keeps the bytes and the flag as they came)
pytestmark = [pytest.mark.integration, pytest.mark.once]

TYPES = ("ZLIB", "LZ4", "ZSTD")
SIZES = (8192, 100_000, 100)  # Java compresses bodies of 4 KiB or more, not the last one


async def test_java_compressed_bodies_are_consumed(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    """Java's DefaultMQProducer with each compressType; our consumer reads every body."""
    async with Producer(namesrv=rocketmq_namesrv, group="G_compress_feed") as producer:
        await create_topic(producer.instance, unique_topic, queues=1)
        queue = MessageQueue(unique_topic, "broker-a", 0)
        expected: dict[str, bytes] = {}
        for size in SIZES:
            sent = await java("produce", rocketmq_namesrv, unique_topic, "G_java_feed",
                              ",".join(TYPES), 1, size)  # fmt: skip
            assert [s["status"] for s in sent] == ["SEND_OK"] * len(TYPES)
            expected |= {f"{kind}-{size}": body(0, size) for kind in TYPES}
        # as stored: the compression bits Java set (none on the small body)
        raw = await pull(producer.instance, queue, expect=len(expected), decompress=False)
        bits = [m.sys_flag & (MessageSysFlag.COMPRESSION_MASK | MessageSysFlag.COMPRESSED)
                for m in raw]  # fmt: skip
        flags = [CompressionType[kind].sys_flag for kind in TYPES]
        zlib_bits = MessageSysFlag.COMPRESSED | MessageSysFlag.COMPRESSION_ZLIB
        assert bits == [zlib_bits, *flags[1:]] * 2 + [0, 0, 0]  # Java marks zlib 0x300 too
    async with PullConsumer(
        group=unique_group, namesrv=rocketmq_namesrv,
        options=PullOptions(auto_offset_reset="earliest"),
    ) as consumer:  # fmt: skip
        await consumer.assign([queue])
        got: list[bytes] = []
        while len(got) < len(expected):
            for records in (await consumer.getmany(timeout=10)).values():
                got += [m.body for m in records]
        assert got == [body(0, size) for size in SIZES for _ in TYPES]


async def test_our_compressed_bodies_are_consumed_by_java(
    rocketmq_namesrv: str, unique_topic: str, unique_group: str
) -> None:
    """Our producer with each compress_type; Java's DefaultMQPushConsumer reads every body."""
    sent: dict[str, bytes] = {}
    async with Producer(namesrv=rocketmq_namesrv, group="G_compress_feed") as plain:
        await create_topic(plain.instance, unique_topic, queues=2)
    for kind in TYPES:
        async with Producer(
            namesrv=rocketmq_namesrv, options=ProducerOptions(compress_type=kind)
        ) as producer:
            for size in SIZES:
                key = f"{kind}-{size}"
                sent[key] = body(size, size)
                result = await producer.send(
                    Message(topic=unique_topic, body=sent[key], keys=[key])
                )
                # as stored: the chosen compressor's bits (zlib: 0x1 alone), none when small
                (raw,) = await pull(producer.instance, result.queue, expect=1,
                                    offset=result.queue_offset, decompress=False)  # fmt: skip
                expected = CompressionType[kind].sys_flag if size >= 4096 else 0
                assert (
                    raw.sys_flag & (MessageSysFlag.COMPRESSED | MessageSysFlag.COMPRESSION_MASK)
                    == expected
                )
    got = await java("consume", rocketmq_namesrv, unique_topic, unique_group, len(sent), 60)
    received = {m["key"]: (m["len"], m["crc"]) for m in got if "key" in m}
    assert received == {k: (len(b), zlib.crc32(b)) for k, b in sent.items()}
