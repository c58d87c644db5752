"""A mutational fuzzer for every decoder that reads peer bytes: ``make fuzz`` runs a million
inputs (``python -m tests.fuzz.mutate --inputs 1000000``); the test suite a short run.

Seeds are real bytes (a pull body and route/cluster JSON captured from a broker, encoded
frames); each input is a seed with random bit flips, byte overwrites, insertions, deletions,
truncation or splices. A decoder may only answer with a value or ``ProtocolError``: anything
else (an ``IndexError``, a ``UnicodeDecodeError``, a hang) is a bug, reported with the input.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

from rocketmq_actors.protocol.bodies import (
    ClusterInfo,
    ConsumeDirectlyResult,
    RunningInfo,
    TopicRouteData,
    decode_consumer_list,
    decode_consumer_status,
    decode_lock_batch_response,
    decode_offset_table,
    decode_topic_list,
)
from rocketmq_actors.protocol.codes import RequestCode, SerializeType
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.protocol.errors import ProtocolError
from rocketmq_actors.protocol.framing import FrameDecoder
from rocketmq_actors.protocol.records import decode_messages

FIXTURES = Path(__file__).resolve().parents[1] / "protocol" / "fixtures"


def _frames() -> bytes:
    commands = [
        RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {"a": "g", "b": "T"}, b"body"),
        RemotingCommand.request(
            RequestCode.PULL_MESSAGE,
            {"topic": "T", "queueId": "1"},
            serialize_type=SerializeType.ROCKETMQ,
        ),
        RemotingCommand.request(RequestCode.HEART_BEAT, None, b'{"clientID":"x"}'),
    ]
    return b"".join(c.encode() for c in commands)


def _feed(data: bytes) -> None:
    FrameDecoder().feed(data)


TARGETS: dict[str, tuple[bytes, Callable[[bytes], object]]] = {
    "frames": (_frames(), _feed),
    "stored_messages": ((FIXTURES / "pull_body.bin").read_bytes(), decode_messages),
    "route": ((FIXTURES / "route_standard.json").read_bytes(), TopicRouteData.decode),
    "route_legacy": ((FIXTURES / "route_legacy.json").read_bytes(), TopicRouteData.decode),
    "cluster_info": ((FIXTURES / "cluster_info.json").read_bytes(), ClusterInfo.decode),
    "offset_table": (
        b'{"offsetTable":{{"brokerName":"b","queueId":1,"topic":"T"}:5}}',
        decode_offset_table,
    ),
    "consumer_status": (
        b'{"consumerTable":{"g":{{"brokerName":"b","queueId":0,"topic":"T"}:3}}}',
        decode_consumer_status,
    ),
    "lock_batch": (
        b'{"lockOKMQSet":[{"brokerName":"b","queueId":0,"topic":"T"}]}',
        decode_lock_batch_response,
    ),
    "consumer_list": (b'{"consumerIdList":["a","b"]}', decode_consumer_list),
    "topic_list": (b'{"topicList":["A","B"]}', decode_topic_list),
    "running_info": (b'{"properties":{"a":"b"},"subscriptionSet":[]}', RunningInfo.decode),
    "consume_directly": (
        b'{"order":false,"autoCommit":true,"consumeResult":"CR_SUCCESS","remark":"",'
        b'"spentTimeMills":1}',
        ConsumeDirectlyResult.decode,
    ),
}


def mutate(seed: bytes, rng: random.Random, others: list[bytes]) -> bytes:
    data = bytearray(seed)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(6)
        at = rng.randrange(len(data) + 1)
        if op == 0 and data:  # flip a bit
            i = min(at, len(data) - 1)
            data[i] ^= 1 << rng.randrange(8)
        elif op == 1 and data:  # overwrite with an interesting byte
            i = min(at, len(data) - 1)
            data[i] = rng.choice([0, 0x7F, 0x80, 0xFF, 0x22, 0x7B, 0x7D, 0x5C, rng.randrange(256)])
        elif op == 2:  # insert random bytes
            data[at:at] = rng.randbytes(rng.randint(1, 8))
        elif op == 3 and data:  # delete a run
            del data[at : at + rng.randint(1, 16)]
        elif op == 4:  # truncate
            del data[at:]
        else:  # splice another seed in
            other = rng.choice(others)
            start = rng.randrange(len(other) + 1)
            data[at:at] = other[start : start + rng.randint(1, 32)]
    return bytes(data)


def run(inputs: int, seed: int = 0) -> dict[str, int]:
    """Feed ``inputs`` mutated inputs, spread over the targets; raise on the first decoder
    error that is not a ``ProtocolError``. Returns inputs per outcome."""
    rng = random.Random(seed)
    seeds = [s for s, _ in TARGETS.values()]
    names = list(TARGETS)
    counts = {"inputs": 0, "decoded": 0, "protocol_error": 0}
    for n in range(inputs):
        name = names[n % len(names)]
        base, decode = TARGETS[name]
        data = mutate(base, rng, seeds)
        try:
            decode(data)
            counts["decoded"] += 1
        except ProtocolError:
            counts["protocol_error"] += 1
        except Exception as exc:
            raise AssertionError(f"{name}: {type(exc).__name__}: {exc} on input {data!r}") from exc
        counts["inputs"] += 1
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--inputs", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=int(time.time()))
    args = parser.parse_args(argv)
    began = time.monotonic()
    counts = run(args.inputs, args.seed)
    elapsed = time.monotonic() - began
    sys.stdout.write(
        f"seed {args.seed}: {counts['inputs']} inputs in {elapsed:.0f} s "
        f"({counts['inputs'] / elapsed:,.0f}/s); decoded {counts['decoded']}, "
        f"ProtocolError {counts['protocol_error']}, anything else 0\n"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
