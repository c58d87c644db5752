"""FrameDecoder: any chunking, size limit before buffering, only ProtocolError on garbage."""

from __future__ import annotations

import contextlib
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_actors.protocol.command import MAX_FRAME_SIZE, RemotingCommand
from rocketmq_actors.protocol.errors import FrameTooLarge, ProtocolError
from rocketmq_actors.protocol.framing import FrameDecoder, decode_frame

COMMANDS = [
    RemotingCommand(code=i, opaque=i, ext_fields={"n": str(i)}, body=b"x" * (i * 7))
    for i in range(12)
]
STREAM = b"".join(c.encode() for c in COMMANDS)


def test_one_byte_at_a_time() -> None:
    decoder = FrameDecoder()
    out = []
    for i in range(len(STREAM)):
        out += decoder.feed(STREAM[i : i + 1])
    assert out == COMMANDS and decoder.buffered == 0


def test_everything_at_once() -> None:
    assert FrameDecoder().feed(STREAM) == COMMANDS


@given(st.lists(st.integers(1, 200), max_size=60))
def test_any_chunking_gives_the_same_commands(cuts: list[int]) -> None:
    decoder = FrameDecoder()
    out: list[RemotingCommand] = []
    pos = 0
    for size in cuts:
        out += decoder.feed(STREAM[pos : pos + size])
        pos += size
    out += decoder.feed(STREAM[pos:])
    assert out == COMMANDS


def test_buffer_holds_only_the_incomplete_frame() -> None:
    decoder = FrameDecoder()
    decoder.feed(STREAM + STREAM[:5])
    assert decoder.buffered == 5


def test_oversized_frame_rejected_from_its_prefix_alone() -> None:
    decoder = FrameDecoder()
    with pytest.raises(FrameTooLarge) as info:
        decoder.feed(struct.pack(">iI", MAX_FRAME_SIZE + 1, 10))
    assert info.value.size == MAX_FRAME_SIZE + 1
    assert decoder.buffered == 8  # nothing beyond what the peer sent was allocated


def test_custom_limit() -> None:
    frame = RemotingCommand(code=1, body=b"x" * 100).encode()
    with pytest.raises(FrameTooLarge):
        FrameDecoder(max_frame_size=64).feed(frame)


def test_decoder_stays_failed_after_an_error() -> None:
    decoder = FrameDecoder()
    with pytest.raises(ProtocolError):
        decoder.feed(struct.pack(">iI", 2, 0))  # total smaller than its own header word
    with pytest.raises(ProtocolError):
        decoder.feed(COMMANDS[0].encode())


@pytest.mark.parametrize(
    "prefix",
    [
        struct.pack(">iI", -1, 0),  # negative length
        struct.pack(">iI", 10, 100),  # header longer than the frame
        struct.pack(">iI", 10, 0x05000002) + b"{}" + b"\0" * 4,  # serialize type 5
    ],
)
def test_malformed_prefixes(prefix: bytes) -> None:
    with pytest.raises(ProtocolError):
        FrameDecoder().feed(prefix)


def test_decode_frame_wants_exactly_one() -> None:
    with pytest.raises(ProtocolError):
        decode_frame(STREAM)
    with pytest.raises(ProtocolError):
        decode_frame(COMMANDS[0].encode()[:-1])


@given(st.binary(max_size=512))
def test_garbage_raises_only_protocol_error(data: bytes) -> None:
    with contextlib.suppress(ProtocolError):
        FrameDecoder().feed(data)


@given(st.binary(min_size=1, max_size=64), st.integers(0, 10_000))
def test_corrupted_stream_raises_only_protocol_error(noise: bytes, at: int) -> None:
    pos = at % len(STREAM)
    corrupted = STREAM[:pos] + noise + STREAM[pos + len(noise) :]
    with contextlib.suppress(ProtocolError):
        FrameDecoder().feed(corrupted)


def test_unknown_serialize_type_fails_from_the_prefix_alone() -> None:
    """Garbage announcing a long frame must not leave the reader waiting for the rest."""
    with pytest.raises(ProtocolError, match="bad-serialize-type"):
        FrameDecoder().feed(struct.pack(">iI", 100, 0x02000004))
