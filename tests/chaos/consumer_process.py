"""A push consumer in its own process, for chaos tests that ``kill -9`` consumers.

    python -m tests.chaos.consumer_process NAMESRV GROUP TOPIC RECEIPTS_FILE PERSIST_INTERVAL

Each handled message appends ``<key> <queue id> <monotonic time>`` to the receipts file and
the line reaches the kernel (an unbuffered ``os.write``) before the handler returns, so a
message whose offset was committed always has its receipt, whatever kills the process.
Every rebalance prints ``assigned <queue ids>`` on stdout.
"""

from __future__ import annotations

import os
import sys
import time

import anyio

from rocketmq_actors.consumer.push import ConsumeFrom, PushConsumer, PushOptions
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.records import MessageExt


async def main(namesrv: str, group: str, topic: str, receipts: str, persist: float) -> None:
    fd = os.open(receipts, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    async def handle(message: MessageExt) -> None:
        line = f"{message.keys[0]} {message.queue_id} {time.monotonic():.3f}\n"
        os.write(fd, line.encode())

    def assigned(queues: list[MessageQueue]) -> None:
        sys.stdout.write("assigned " + " ".join(str(q.queue_id) for q in queues) + "\n")
        sys.stdout.flush()

    async with PushConsumer(
        group=group,
        subscriptions={topic: "*"},
        handler=handle,
        on_rebalance=assigned,
        namesrv=namesrv,
        options=PushOptions(consume_from=ConsumeFrom.FIRST_OFFSET, persist_interval=persist),
    ):  # fmt: skip
        await anyio.sleep_forever()


if __name__ == "__main__":
    namesrv, group, topic, receipts, persist = sys.argv[1:6]
    anyio.run(main, namesrv, group, topic, receipts, float(persist))
