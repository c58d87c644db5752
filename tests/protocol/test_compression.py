"""Body compression as the Java client's ``CompressorFactory`` does it: the frames Java's
``LZ4FrameOutputStream`` and ``ZstdOutputStream`` write, told apart by sysFlag bits 8-10."""

from __future__ import annotations

import zlib

import lz4.frame
import pytest
import zstandard

from rocketmq_actors.protocol.compression import CompressionType, compress, decompress
from rocketmq_actors.protocol.errors import ProtocolError
from rocketmq_actors.protocol.messages import MessageSysFlag

BODY = bytes(range(256)) * 64


@pytest.mark.parametrize("kind", list(CompressionType))
def test_round_trip_and_the_bits_java_sets(kind: CompressionType) -> None:
    packed = compress(BODY, kind, 5)
    assert len(packed) < len(BODY) and decompress(packed, kind.sys_flag) == BODY
    expected = {"zlib": 0, "lz4": 0x100, "zstd": 0x200}[kind.value]
    assert kind.sys_flag == MessageSysFlag.COMPRESSED | expected


def test_old_clients_zlib_and_explicit_zlib_bits_both_read_as_zlib() -> None:
    packed = zlib.compress(BODY)
    assert decompress(packed, MessageSysFlag.COMPRESSED) == BODY
    assert decompress(packed, MessageSysFlag.COMPRESSED | MessageSysFlag.COMPRESSION_ZLIB) == BODY


def test_a_streamed_zstd_frame_without_content_size_decodes() -> None:
    """Java's ZstdOutputStream writes frames that do not record the content size; the one-shot
    ``ZstdDecompressor().decompress`` refuses those."""
    streamed = zstandard.ZstdCompressor(write_content_size=False).compress(BODY)
    with pytest.raises(zstandard.ZstdError):
        zstandard.ZstdDecompressor().decompress(streamed)
    assert decompress(streamed, CompressionType.ZSTD.sys_flag) == BODY


def test_lz4_frames_have_independent_blocks_as_java_needs() -> None:
    """lz4-java's LZ4FrameInputStream refuses linked blocks ("Dependent block stream is
    unsupported"), which python-lz4 writes by default for bodies over one 64 KiB block."""
    big = bytes(range(256)) * 4096  # 1 MiB
    info = lz4.frame.get_frame_info(compress(big, CompressionType.LZ4, 5))
    assert info["block_linked"] is False


def test_lz4_frames_with_block_checksums_decode() -> None:
    packed = lz4.frame.compress(BODY, block_checksum=True, content_checksum=True)
    assert decompress(packed, CompressionType.LZ4.sys_flag) == BODY


@pytest.mark.parametrize("kind", list(CompressionType))
def test_a_truncated_or_foreign_body_is_a_protocol_error(kind: CompressionType) -> None:
    packed = compress(BODY, kind, 5)
    for broken in (packed[: len(packed) // 2], b"not compressed at all", b""):
        with pytest.raises(ProtocolError, match="bad-compressed-body"):
            decompress(broken, kind.sys_flag)


@pytest.mark.parametrize("bits", [0x400, 0x500, 0x600, 0x700])
def test_bits_naming_no_compressor_are_unsupported(bits: int) -> None:
    with pytest.raises(ProtocolError, match="unsupported-compression"):
        decompress(zlib.compress(BODY), MessageSysFlag.COMPRESSED | bits)


def _streamed_zstd(body: bytes) -> bytes:
    compressor = zstandard.ZstdCompressor().compressobj()
    return bytes(compressor.compress(body) + compressor.flush())


BOMBS = {
    "zlib": (lambda b: zlib.compress(b, 9), MessageSysFlag.COMPRESSION_ZLIB),
    "lz4": (lz4.frame.compress, MessageSysFlag.COMPRESSION_LZ4),
    "zstd streamed": (_streamed_zstd, MessageSysFlag.COMPRESSION_ZSTD),
    "zstd sized": (zstandard.ZstdCompressor().compress, MessageSysFlag.COMPRESSION_ZSTD),
}


@pytest.mark.parametrize("kind", BOMBS.values(), ids=BOMBS.keys())
def test_a_body_inflates_to_its_limit_and_no_further(kind: tuple[object, int]) -> None:
    """A bomb (a few KiB of zeros that inflate to 8 MiB) is refused without inflating it: a
    body of exactly the limit decodes, one byte more does not."""
    squeeze, bits = kind
    flag = MessageSysFlag.COMPRESSED | bits
    limit = 64 * 1024
    exact = squeeze(bytes(limit))  # type: ignore[operator]
    assert decompress(exact, flag, limit) == bytes(limit)
    for body in (squeeze(bytes(limit + 1)), squeeze(bytes(8 * 1024 * 1024))):  # type: ignore[operator]
        with pytest.raises(ProtocolError) as info:
            decompress(body, flag, limit)
        assert info.value.reason in ("body-too-large", "bad-compressed-body")
        assert str(limit) in str(info.value)


def test_by_default_the_limit_is_a_brokers_4_mib() -> None:
    flag = MessageSysFlag.COMPRESSED
    assert len(decompress(zlib.compress(bytes(4 * 1024 * 1024)), flag)) == 4 * 1024 * 1024
    with pytest.raises(ProtocolError, match="body-too-large"):
        decompress(zlib.compress(bytes(4 * 1024 * 1024 + 1)), flag)
