"""Message body compression as the Java client does it (``CompressionType``, ``CompressorFactory``).

A compressed body has bit ``COMPRESSED`` (0x1) of its sysFlag set and names its compressor in
bits 8-10: ``0x100`` LZ4 (an LZ4 *frame* of independent blocks, as ``LZ4FrameOutputStream``
writes and reads), ``0x200`` ZSTD (a zstd frame, as ``ZstdOutputStream`` writes), ``0x300``
ZLIB. ``0`` in those bits is zlib too: what every 4.x client sends. Decoding follows the bits;
encoding with zlib sets bit 0x1 alone, which every broker and consumer version reads as zlib.

LZ4 and ZSTD come from the ``lz4`` and ``zstandard`` packages (dependencies of the default
install, with wheels for every platform we support); they are imported on first use.
"""

from __future__ import annotations

import enum
import zlib
from typing import Any

from .errors import ProtocolError
from .messages import MAX_MESSAGE_SIZE, MessageSysFlag

__all__ = ["CompressionType", "compress", "decompress"]


class CompressionType(enum.Enum):
    """The compressor a producer uses for bodies over its threshold (Java's ``compressType``,
    ``-Drocketmq.message.compressType``). ZLIB is the default, as in Java."""

    ZLIB = "zlib"
    LZ4 = "lz4"
    ZSTD = "zstd"

    @property
    def sys_flag(self) -> int:
        """The sysFlag bits of a body compressed this way."""
        return _FLAGS[self]


_FLAGS = {
    CompressionType.ZLIB: MessageSysFlag.COMPRESSED,
    CompressionType.LZ4: MessageSysFlag.COMPRESSED | MessageSysFlag.COMPRESSION_LZ4,
    CompressionType.ZSTD: MessageSysFlag.COMPRESSED | MessageSysFlag.COMPRESSION_ZSTD,
}


def _lz4() -> Any:
    import lz4.frame

    return lz4.frame


def _zstd() -> Any:
    import zstandard

    return zstandard


def compress(body: bytes, kind: CompressionType, level: int) -> bytes:
    """``body`` compressed as a Java consumer of that type expects. ``level`` is zlib's and
    zstd's level (Java passes ``compressLevel`` to both); LZ4 frames ignore it, as in Java."""
    if kind is CompressionType.ZLIB:
        return zlib.compress(body, level)
    if kind is CompressionType.LZ4:
        # Java's LZ4FrameInputStream reads independent blocks only; 4 MiB blocks as Java writes
        lz4 = _lz4()
        return bytes(lz4.compress(body, block_linked=False, block_size=lz4.BLOCKSIZE_MAX4MB))
    return bytes(_zstd().ZstdCompressor(level=level).compress(body))


def decompress(body: bytes, sys_flag: int, limit: int = MAX_MESSAGE_SIZE) -> bytes:
    """The body of a record whose sysFlag has ``COMPRESSED`` set, inflated to at most
    ``limit`` bytes: a body that would inflate past it (a bomb: 64 KiB of zeros inflate to
    64 MiB), that is not what its bits say, or whose bits name no compressor is a
    :class:`ProtocolError`; nothing past ``limit`` (plus a block) is ever allocated."""
    kind = sys_flag & MessageSysFlag.COMPRESSION_MASK
    try:
        if kind in (0, MessageSysFlag.COMPRESSION_ZLIB):
            inflater = zlib.decompressobj()
            inflated = inflater.decompress(body, limit + 1)
            return _bounded(inflated, limit, complete=inflater.eof)
        if kind == MessageSysFlag.COMPRESSION_LZ4:
            frames = _lz4().LZ4FrameDecompressor()
            inflated = bytes(frames.decompress(body, max_length=limit + 1))
            return _bounded(inflated, limit, complete=frames.eof)
        if kind == MessageSysFlag.COMPRESSION_ZSTD:
            zstd = _zstd()
            # a streamed frame (Java's ZstdOutputStream) does not record its size: the output
            # buffer is then ``limit`` bytes, and a frame that needs more fails (as does a
            # truncated one); a frame that records its size is checked before allocating it
            size = zstd.frame_content_size(body)
            if size > limit:
                raise _too_large(limit)
            try:
                return bytes(zstd.ZstdDecompressor().decompress(body, max_output_size=limit))
            except zstd.ZstdError as exc:
                raise ValueError(f"{exc} (truncated, or inflating past {limit} bytes)") from None
    except ProtocolError:
        raise
    except Exception as exc:  # zlib.error, RuntimeError (lz4), ZstdError: all "not a body"
        raise ProtocolError("bad-compressed-body", f"{type(exc).__name__}: {exc}") from None
    raise ProtocolError("unsupported-compression", f"compression type bits {kind:#x}")


def _too_large(limit: int) -> ProtocolError:
    return ProtocolError("body-too-large", f"the body inflates past {limit} bytes")


def _bounded(inflated: bytes, limit: int, *, complete: bool) -> bytes:
    if len(inflated) > limit:
        raise _too_large(limit)
    if not complete:
        raise ValueError("truncated compressed body")
    return inflated
