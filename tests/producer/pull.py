"""Reading messages back in producer tests: long-poll pulls on one queue (the consumer issue's
PullConsumer will replace this)."""

from __future__ import annotations

import time

import anyio

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.codes import RequestCode, ResponseCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.protocol.headers import PullMessageRequestHeader, PullMessageResponseHeader
from rocketmq_actors.protocol.messages import PullSysFlag
from rocketmq_actors.protocol.records import MessageExt, decode_messages


async def pull(
    instance: ClientInstance,
    queue: MessageQueue,
    *,
    expect: int,
    timeout: float = 20.0,
    offset: int = 0,
    group: str = "G_producer_tests",
    decompress: bool = True,
) -> list[MessageExt]:
    """Long-poll ``queue`` from ``offset`` until ``expect`` messages arrived or ``timeout``
    passed; returns what arrived (fewer than ``expect`` on timeout)."""
    route = await instance.routes.refresh(queue.topic)
    addr = route.master_addr(queue.broker_name)
    assert addr is not None
    got: list[MessageExt] = []
    deadline = time.monotonic() + timeout
    while len(got) < expect and (remaining := deadline - time.monotonic()) > 0:
        suspend = int(min(remaining, 5.0) * 1000)
        header = PullMessageRequestHeader(
            consumer_group=group, topic=queue.topic, queue_id=queue.queue_id,
            queue_offset=offset, max_msg_nums=256,
            sys_flag=PullSysFlag.build(commit_offset=False, suspend=True, subscription=True),
            suspend_timeout_millis=suspend, subscription="*", expression_type="TAG",
        )  # fmt: skip
        reply = await instance.request(
            addr, RemotingCommand.request(RequestCode.PULL_MESSAGE, header.to_ext()),
            timeout=suspend / 1000 + 10,
        )  # fmt: skip
        response = PullMessageResponseHeader.from_ext(reply.ext_fields)
        if reply.code == ResponseCode.SUCCESS:
            got += decode_messages(reply.body, decompress=decompress)
        elif reply.code not in (ResponseCode.PULL_NOT_FOUND, ResponseCode.PULL_RETRY_IMMEDIATELY):
            await anyio.sleep(0.2)  # e.g. the topic is still being created on the broker
        offset = response.next_begin_offset
    return got
