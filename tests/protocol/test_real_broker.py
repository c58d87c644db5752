"""The codec against a real broker over a plain blocking socket (no runtime layer involved)."""

from __future__ import annotations

import time

import pytest

from rocketmq_actors.protocol.bodies import TopicRouteData
from rocketmq_actors.protocol.codes import RequestCode, ResponseCode, SerializeType
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.protocol.headers import (
    GetMaxOffsetRequestHeader,
    OffsetResponseHeader,
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    SendMessageRequestHeader,
    SendMessageResponseHeader,
)
from rocketmq_actors.protocol.messages import (
    Message,
    Property,
    PullSysFlag,
    UniqueIdGenerator,
    decode_offset_msg_id,
    encode_properties,
)
from rocketmq_actors.protocol.records import decode_messages
from rocketmq_actors.testing import probe
from rocketmq_actors.testing.cluster import LocalCluster

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("serialize_type", list(SerializeType), ids=lambda t: t.name)
def test_route_of_tbw102(rocketmq_cluster: LocalCluster, serialize_type: SerializeType) -> None:
    cmd = RemotingCommand.request(
        RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TBW102"}, serialize_type=serialize_type
    )
    reply = probe.request(rocketmq_cluster.namesrv_addr, cmd)
    assert reply.code == ResponseCode.SUCCESS and reply.is_response
    route = TopicRouteData.decode(reply.body)
    assert route.broker_datas[0].master_addr == rocketmq_cluster.broker("broker-a").addr


def test_unknown_topic_route_is_topic_not_exist(
    rocketmq_cluster: LocalCluster, unique_topic: str
) -> None:
    cmd = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": unique_topic})
    reply = probe.request(rocketmq_cluster.namesrv_addr, cmd)
    assert reply.code == ResponseCode.TOPIC_NOT_EXIST and reply.remark


@pytest.mark.parametrize("serialize_type", list(SerializeType), ids=lambda t: t.name)
def test_send_then_pull_the_same_message(
    rocketmq_cluster: LocalCluster,
    unique_topic: str,
    unique_group: str,
    serialize_type: SerializeType,
) -> None:
    broker = rocketmq_cluster.broker("broker-a").addr
    uniq = UniqueIdGenerator().next_id()
    msg = Message(
        topic=unique_topic,
        body="payload \u00e9".encode(),
        tags="TagA",
        keys=["k-1"],
        properties={"color": "red"},
    )
    props = msg.wire_properties() | {Property.UNIQ_KEY: uniq}
    send = SendMessageRequestHeader(
        producer_group=unique_group + "_p",
        topic=unique_topic,
        queue_id=1,
        born_timestamp=int(time.time() * 1000),
        flag=42,
        properties=encode_properties(props),
    )
    reply = probe.request(
        broker,
        RemotingCommand.request(
            RequestCode.SEND_MESSAGE_V2,
            send.to_ext(v2=True),
            msg.body,
            serialize_type=serialize_type,
        ),
    )
    assert reply.code == ResponseCode.SUCCESS, reply.remark
    sent = SendMessageResponseHeader.from_ext(reply.ext_fields)
    assert sent.queue_id == 1 and sent.queue_offset == 0
    # 5.x echoes the unique key as the transaction id of every send; 4.9 only of transactions
    assert sent.transaction_id == (None if rocketmq_cluster.spec.is_4x else uniq)
    assert decode_offset_msg_id(sent.msg_id)[0] == broker

    # The consume queue is built from the commit log by a broker thread after the send returns:
    # 4.9 can still answer 0 for a moment (seen on a fresh-clone run). Ask until it moves.
    deadline = time.monotonic() + 5
    while True:
        max_offset = probe.request(
            broker,
            RemotingCommand.request(
                RequestCode.GET_MAX_OFFSET,
                GetMaxOffsetRequestHeader(topic=unique_topic, queue_id=1).to_ext(),
                serialize_type=serialize_type,
            ),
        )
        offset = OffsetResponseHeader.from_ext(max_offset.ext_fields).offset
        if offset != 0 or time.monotonic() > deadline:
            break
    assert offset == 1

    pull = PullMessageRequestHeader(
        consumer_group=unique_group,
        topic=unique_topic,
        queue_id=1,
        queue_offset=0,
        max_msg_nums=32,
        sys_flag=PullSysFlag.build(commit_offset=False, suspend=False, subscription=True),
        suspend_timeout_millis=0,
        subscription="TagA",
        expression_type="TAG",
    )
    reply = probe.request(
        broker,
        RemotingCommand.request(
            RequestCode.PULL_MESSAGE, pull.to_ext(), serialize_type=serialize_type
        ),
    )
    assert reply.code == ResponseCode.SUCCESS, reply.remark
    header = PullMessageResponseHeader.from_ext(reply.ext_fields)
    assert header.next_begin_offset == 1 and header.max_offset == 1
    (got,) = decode_messages(reply.body)
    assert got.msg_id == uniq and got.offset_msg_id == sent.msg_id
    assert (got.topic, got.body, got.tags, got.keys, got.flag) == (
        unique_topic,
        msg.body,
        "TagA",
        ["k-1"],
        42,
    )
    assert got.properties["color"] == "red" and got.queue_id == 1 and got.queue_offset == 0
