"""Codec micro-benchmarks (``make bench`` / ``python -m benchmarks.codec``).

Figures are best-of-N timings on one core, written to ``benchmarks/results/codec.json``. They are
measurements for the record and for before/after comparisons; no test asserts on them.

Targets (issue: protocol layer): encoding a SEND_MESSAGE_V2 request in at most 3 us; decoding at
least 500k 128-byte messages per second from a pull body.
"""

from __future__ import annotations

import argparse
import timeit
from collections.abc import Callable
from pathlib import Path

from rocketmq_actors.protocol.codes import RequestCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.protocol.framing import FrameDecoder
from rocketmq_actors.protocol.headers import SendMessageRequestHeader
from rocketmq_actors.protocol.records import decode_messages
from rocketmq_actors.protocol.sendframe import SendFrameEncoder
from rocketmq_actors.testing.stored import encode_stored

from .common import RESULTS, run_main, write_results

# What a real 5.3.3 broker returns on a message from a producer (see the pull fixture).
PROPS = {
    "UNIQ_KEY": "C0A8000100002A9F0000000000000000",
    "WAIT": "true",
    "TAGS": "TagA",
    "KEYS": "order-1",
    "MSG_REGION": "DefaultRegion",
    "TRACE_ON": "true",
    "CLUSTER": "DefaultCluster",
}
WIRE_PROPS = "UNIQ_KEY\x01C0A8000100002A9F0000000000000000\x02WAIT\x01true\x02TAGS\x01TagA\x02"


def _best(fn: Callable[[], object], number: int, repeat: int = 7) -> float:
    """Best per-call time in seconds."""
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def bench_encode_fast() -> float:
    encoder = SendFrameEncoder("producer-group")
    body = b"x" * 128
    return _best(
        lambda: encoder.encode(7, "TopicTest", 1, body, 1_700_000_000_000, WIRE_PROPS, "broker-a"),
        20_000,
    )


def bench_encode_generic() -> float:
    body = b"x" * 128

    def run() -> bytes:
        header = SendMessageRequestHeader(
            producer_group="producer-group",
            topic="TopicTest",
            queue_id=1,
            born_timestamp=1_700_000_000_000,
            properties=WIRE_PROPS,
            broker_name="broker-a",
        )
        return RemotingCommand(
            code=RequestCode.SEND_MESSAGE_V2,
            opaque=7,
            ext_fields=header.to_ext(v2=True),
            body=body,
        ).encode()

    return _best(run, 5_000)


def _pull_body(count: int = 32) -> bytes:
    return b"".join(
        encode_stored(
            topic="BenchTopic",
            body=b"x" * 128,
            properties=PROPS,
            queue_offset=i,
            commit_log_offset=i * 300,
        )
        for i in range(count)
    )


def bench_decode(with_properties: bool) -> float:
    """Seconds per message, 32 messages per pull body (the push consumer's batch size)."""
    body = _pull_body()

    def decode_only() -> None:
        decode_messages(body)

    def decode_and_read() -> None:
        for msg in decode_messages(body):
            _ = msg.properties

    return _best(decode_and_read if with_properties else decode_only, 2_000) / 32


def bench_decode_response_frames(per_chunk: int = 64) -> float:
    frame = RemotingCommand(
        code=0,
        opaque=7,
        flag=1,
        body=b"",
        ext_fields={"msgId": "A" * 32, "queueId": "1", "queueOffset": "42"},
    ).encode()
    chunk = frame * per_chunk
    return _best(lambda: FrameDecoder().feed(chunk), 500) / per_chunk


def figures() -> dict[str, float]:
    decode_only = bench_decode(with_properties=False)
    decode_props = bench_decode(with_properties=True)
    encode_fast = bench_encode_fast()
    results = {
        "encode_send_v2_us": round(encode_fast * 1e6, 3),
        "encode_send_v2_target_us": 3.0,
        "encode_send_v2_generic_path_us": round(bench_encode_generic() * 1e6, 3),
        "decode_128b_msgs_per_s": round(1 / decode_only),
        "decode_128b_msgs_per_s_target": 500_000,
        "decode_128b_with_properties_msgs_per_s": round(1 / decode_props),
        "decode_response_frame_us": round(bench_decode_response_frames() * 1e6, 3),
    }
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=RESULTS / "codec.json")
    args = parser.parse_args(argv)
    write_results(args.out, figures())
    return 0


if __name__ == "__main__":
    raise SystemExit(run_main(main))
