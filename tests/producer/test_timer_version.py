"""Timer delivery is refused, before anything is written, when the broker runs 4.x."""

from __future__ import annotations

from typing import Any

import pytest

from rocketmq_actors.errors import InvalidMessage, UnsupportedByBroker
from rocketmq_actors.producer import Message
from rocketmq_actors.producer.prepare import prepare
from rocketmq_actors.producer.selector import LatencyFaultTolerance
from rocketmq_actors.producer.sendloop import SendLoop
from rocketmq_actors.protocol.messages import UniqueIdGenerator
from rocketmq_actors.protocol.sendframe import SendFrameEncoder


class _Heartbeat:
    def __init__(self, version: int) -> None:
        self.version = version
        self.asked: list[str] = []

    async def version_of(self, addr: str, timeout: float) -> int:
        self.asked.append(addr)
        return self.version


class _Instance:
    def __init__(self, version: int) -> None:
        self.heartbeat = _Heartbeat(version)


def _loop(version: int) -> tuple[SendLoop, _Heartbeat]:
    instance: Any = _Instance(version)
    loop = SendLoop(instance, SendFrameEncoder("G"), send_timeout=3.0, retry_times=0,
                    faults=LatencyFaultTolerance(enabled=False))  # fmt: skip
    return loop, instance.heartbeat


async def test_a_4x_broker_is_refused_with_its_version() -> None:
    loop, heartbeat = _loop(407)
    with pytest.raises(UnsupportedByBroker, match=r"needs a RocketMQ 5.x broker; b:1 runs V4_9_7"):
        await loop.check_timer("b:1", 3.0)
    assert heartbeat.asked == ["b:1"]
    assert issubclass(UnsupportedByBroker, InvalidMessage)


async def test_a_5x_broker_takes_timer_messages() -> None:
    loop, _ = _loop(479)
    await loop.check_timer("b:1", 3.0)  # no error


@pytest.mark.parametrize(
    ("fields", "timer"),
    [({"delay_ms": 5}, True), ({"deliver_at_ms": 1}, True), ({"delay_level": 3}, False),
     ({}, False)],
)  # fmt: skip
def test_only_timer_fields_ask_for_the_check(fields: dict[str, Any], timer: bool) -> None:
    msg = Message(topic="T", body=b"x", **fields)
    prepared = prepare(msg, ids=UniqueIdGenerator(), namespace=None, max_size=1000,
                       compress_threshold=0, compress_level=5)  # fmt: skip
    assert prepared.timer is timer
