"""The main job behind `make run`.

Today it starts a real local RocketMQ cluster, publishes 10,000 messages through this
project's producer, and confirms through the brokers' own queue offsets that every one was
stored. The consumer and Spark issues extend it into the full pipeline: Spark publishes a
dataset, a consumer daemon aggregates it.
"""

from __future__ import annotations

import json
import sys
import time
from collections import deque

import anyio

from rocketmq_actors.errors import SendFailed
from rocketmq_actors.logs import configure_logging
from rocketmq_actors.producer import Message, Producer, create_topic
from rocketmq_actors.protocol.codes import RequestCode, ResponseCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.protocol.headers import GetMaxOffsetRequestHeader, OffsetResponseHeader
from rocketmq_actors.runtime.waiters import Waiter
from rocketmq_actors.testing.cluster import LocalCluster

TOPIC = "main_job_orders"
COUNT = 10_000


async def publish(namesrv: str) -> dict[str, object]:
    async with Producer(namesrv=namesrv, group="main_job") as producer:
        await create_topic(producer.instance, TOPIC, queues=4)
        started = time.monotonic()
        pending: deque[Waiter] = deque()
        for i in range(COUNT):
            body = json.dumps({"order": i, "amount": i % 97}).encode()
            message = Message(topic=TOPIC, body=body, tags="order", keys=[f"order-{i}"])
            pending.append(await producer.send_nowait(message))
        acknowledged = failed = 0
        for future in pending:
            try:
                await future
                acknowledged += 1
            except SendFailed:  # typed: counted, never silently dropped
                failed += 1
        seconds = time.monotonic() - started
        # ask the broker how many messages each queue of the topic holds
        route = await producer.instance.routes.refresh(TOPIC)
        stored = 0
        for queue in route.subscribe_queues:
            addr = route.master_addr(queue.broker_name)
            assert addr is not None
            header = GetMaxOffsetRequestHeader(topic=TOPIC, queue_id=queue.queue_id)
            reply = await producer.instance.request(
                addr, RemotingCommand.request(RequestCode.GET_MAX_OFFSET, header.to_ext())
            )
            assert reply.code == ResponseCode.SUCCESS, reply.remark
            stored += OffsetResponseHeader.from_ext(reply.ext_fields).offset
    return {
        "published": acknowledged,
        "failed": failed,
        "stored_by_broker": stored,
        "lost": acknowledged - stored if stored < acknowledged else 0,
        "publish_seconds": round(seconds, 2),
        "msgs_per_s": round(acknowledged / seconds),
    }


def main() -> int:
    configure_logging(level="warning")
    started = time.monotonic()
    with LocalCluster() as cluster:
        summary = anyio.run(publish, cluster.namesrv_addr)
        summary["namesrv"] = cluster.namesrv_addr
        summary["cluster_startup_s"] = round(cluster.timings["total_s"], 2)
    summary["total_s"] = round(time.monotonic() - started, 2)
    sys.stdout.write(json.dumps(summary, indent=2) + "\n")
    return 0 if summary["lost"] == 0 and summary["failed"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
