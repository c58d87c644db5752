"""How trace messages are sent: the send function a client's trace dispatcher is given.

:mod:`rocketmq_actors.trace` builds the records and queues them; it sends them with a function
it is handed (:func:`trace_sender`, injected by the producer and the consumers), so that it
imports nothing from the producer. Trace messages go through a plain send loop of their own,
which no hook sees: trace messages are never traced.
"""

from __future__ import annotations

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.protocol.messages import Message, UniqueIdGenerator
from rocketmq_actors.protocol.sendframe import SendFrameEncoder
from rocketmq_actors.runtime.netinfo import local_ipv4
from rocketmq_actors.trace.dispatcher import Send, trace_group

from .prepare import prepare
from .selector import LatencyFaultTolerance
from .sendloop import ROUND_ROBIN, SendLoop

__all__ = ["trace_sender"]


def trace_sender(instance: ClientInstance, *, group: str, kind: str) -> Send:
    """Trace messages sent through ``instance``, as the Java trace producer sends them (the
    producer group ``_INNER_TRACE_PRODUCER-<group>-<kind>``): 5 s timeout, two retries on
    other brokers, bodies over 4 KiB compressed (zlib)."""
    loop = SendLoop(
        instance,
        SendFrameEncoder(trace_group(group, kind), credentials=instance.pool.credentials),
        send_timeout=5.0, retry_times=2, faults=LatencyFaultTolerance(enabled=False),
    )  # fmt: skip
    ids = UniqueIdGenerator(ip=bytes(int(p) for p in local_ipv4().split(".")))

    async def send(topic: str, body: bytes, keys: list[str]) -> object:
        prepared = prepare(
            Message(topic=topic, body=body, keys=keys), ids=ids, namespace=None,
            max_size=4 * 1024 * 1024, compress_threshold=4096, compress_level=5,
        )  # fmt: skip
        return await loop.send(prepared, ROUND_ROBIN, None)

    return send
