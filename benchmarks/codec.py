"""Codec micro-benchmarks (``make bench`` / ``python -m benchmarks.codec``).

Figures are per-operation times on one core, best of several repeats. They are measurements for
the record and for before/after comparisons, never assertions: no test depends on them.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import timeit
from collections.abc import Callable
from pathlib import Path

from rocketmq_actors.protocol.codes import RequestCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.protocol.framing import FrameDecoder

RESULTS = Path(__file__).resolve().parent / "results"


def _best_per_op(fn: Callable[[], object], number: int, repeat: int = 5) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def bench_encode_request() -> float:
    cmd = RemotingCommand.request(
        RequestCode.SEND_MESSAGE_V2,
        {
            "a": "producer-group",
            "b": "TopicTest",
            "c": "TBW102",
            "d": "4",
            "e": "1",
            "f": "0",
            "g": "1700000000000",
            "h": "0",
            "i": "UNIQ_KEY\x01ABC\x02WAIT\x01true\x02",
            "j": "0",
            "k": "false",
            "m": "false",
            "n": "broker-a",
        },
        b"x" * 128,
    )
    return _best_per_op(cmd.encode, 20000)


def bench_decode_frames(frames_per_chunk: int = 64) -> float:
    frame = RemotingCommand(
        code=0,
        opaque=7,
        flag=1,
        ext_fields={"msgId": "A" * 32, "queueId": "1", "queueOffset": "42"},
        body=b"",
    ).encode()
    chunk = frame * frames_per_chunk

    def run() -> None:
        FrameDecoder().feed(chunk)

    return _best_per_op(run, 500) / frames_per_chunk


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=RESULTS / "codec.json")
    args = parser.parse_args(argv)
    results = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "encode_send_v2_request_us": round(bench_encode_request() * 1e6, 3),
        "decode_response_frame_us": round(bench_decode_frames() * 1e6, 3),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    sys.stdout.write(json.dumps(results) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
