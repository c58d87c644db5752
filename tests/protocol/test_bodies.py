from __future__ import annotations

import json
from pathlib import Path

import pytest

from rocketmq_actors.protocol import bodies
from rocketmq_actors.protocol.bodies import (
    ClusterInfo,
    ConsumerData,
    HeartbeatData,
    MessageQueue,
    SubscriptionData,
    TopicRouteData,
)
from rocketmq_actors.protocol.errors import ProtocolError

FIXTURES = Path(__file__).parent / "fixtures"


def test_real_route_bodies_in_both_dialects_decode_alike() -> None:
    legacy = (FIXTURES / "route_legacy.json").read_bytes()
    standard = (FIXTURES / "route_standard.json").read_bytes()
    assert b"{0:" in legacy and b'{"0":' in standard  # the two dialects really differ
    route = TopicRouteData.decode(legacy)
    assert route == TopicRouteData.decode(standard)
    assert route.broker_datas[0].broker_name == "broker-a"
    assert route.broker_datas[0].master_addr is not None
    assert route.queue_datas[0].write_queue_nums == 4 and route.queue_datas[0].perm == 6


def test_real_cluster_info_decodes() -> None:
    info = ClusterInfo.decode((FIXTURES / "cluster_info.json").read_bytes())
    assert info.clusters == {"DefaultCluster": ("broker-a",)}
    assert set(info.brokers["broker-a"].broker_addrs) == {0}


def test_route_tolerates_old_field_names_and_order_conf() -> None:
    raw = (
        b'{"orderTopicConf":"broker-a:2","queueDatas":[{"brokerName":"broker-a","perm":6,'
        b'"readQueueNums":2,"writeQueueNums":2,"topicSynFlag":3,"extra":1}],"brokerDatas":[]}'
    )
    route = TopicRouteData.decode(raw)
    assert route.order_topic_conf == "broker-a:2"
    assert route.queue_datas[0].topic_sys_flag == 3


@pytest.mark.parametrize(
    "raw",
    [
        b"[]",
        b'{"queueDatas":[{"brokerName":1}]}',
        b'{"brokerDatas":[{"brokerName":"b","brokerAddrs":{"x":"a"}}]}',
        b'{"brokerDatas":[{"brokerName":"b","brokerAddrs":{0:5}}]}',
        b'{"queueDatas":{}}',
    ],
)
def test_bad_route_bodies(raw: bytes) -> None:
    with pytest.raises(ProtocolError):
        TopicRouteData.decode(raw)


def test_heartbeat_matches_the_reference_example() -> None:
    """protocol.md section 5.4's example, field for field."""
    sub = SubscriptionData(
        topic="T1", sub_string="TagA", tags=("TagA",), codes=(2598919,), sub_version=1699999999000
    )
    retry = SubscriptionData(topic="%RETRY%g1", sub_version=1699999999000)
    data = HeartbeatData(
        client_id="10.0.0.9@4711#1699999999",
        consumers=(
            ConsumerData(
                group="g1",
                consume_type="CONSUME_PASSIVELY",
                message_model="CLUSTERING",
                consume_from_where="CONSUME_FROM_LAST_OFFSET",
                subscriptions=(sub, retry),
            ),
        ),
    )
    expected = (
        '{"clientID":"10.0.0.9@4711#1699999999","consumerDataSet":[{"consumeFromWhere":'
        '"CONSUME_FROM_LAST_OFFSET","consumeType":"CONSUME_PASSIVELY","groupName":"g1",'
        '"messageModel":"CLUSTERING","subscriptionDataSet":[{"classFilterMode":false,"codeSet":'
        '[2598919],"expressionType":"TAG","subString":"TagA","subVersion":1699999999000,'
        '"tagsSet":["TagA"],"topic":"T1"},{"classFilterMode":false,"codeSet":[],"expressionType":'
        '"TAG","subString":"*","subVersion":1699999999000,"tagsSet":[],"topic":"%RETRY%g1"}],'
        '"unitMode":false}],"heartbeatFingerprint":0,"producerDataSet":[],"withoutSub":false}'
    )
    assert json.loads(data.encode()) == json.loads(expected)


def test_lock_body_and_response() -> None:
    queues = [MessageQueue("T1", "broker-a", 1), MessageQueue("T1", "broker-a", 0)]
    body = json.loads(bodies.encode_lock_batch("g1", "cid", queues))
    assert body == {
        "clientId": "cid",
        "consumerGroup": "g1",
        "mqSet": [
            {"brokerName": "broker-a", "queueId": 0, "topic": "T1"},
            {"brokerName": "broker-a", "queueId": 1, "topic": "T1"},
        ],
        "onlyThisBroker": False,
    }
    granted = bodies.decode_lock_batch_response(
        b'{"lockOKMQSet":[{"brokerName":"broker-a","queueId":1,"topic":"T1"}]}'
    )
    assert granted == {MessageQueue("T1", "broker-a", 1)}


def test_consumer_list() -> None:
    assert bodies.decode_consumer_list(b'{"consumerIdList":["b@2","a@1"]}') == ("b@2", "a@1")
    with pytest.raises(ProtocolError):
        bodies.decode_consumer_list(b'{"consumerIdList":[1]}')


def test_reset_offset_body_both_forms() -> None:
    mq = MessageQueue("t", "b", 0)
    object_keyed = b'{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"t"}:42}}'
    listed = b'{"offsetTable":[{"brokerName":"b","queueId":0,"topic":"t","offset":42}]}'
    assert bodies.decode_offset_table(object_keyed) == {mq: 42}
    assert bodies.decode_offset_table(listed) == {mq: 42}
    with pytest.raises(ProtocolError):
        bodies.decode_offset_table(b'{"offsetTable":{{"topic":"t"}:1}}')


def test_consumer_status_reply_is_fastjson_shaped() -> None:
    mq = MessageQueue("t", "b", 3)
    body = bodies.encode_consumer_status({mq: 7})
    assert body == b'{"messageQueueTable":{{"brokerName":"b","queueId":3,"topic":"t"}:7}}'


def test_running_info_and_consume_directly_replies() -> None:
    mq = MessageQueue("t", "b", 0)
    info = bodies.encode_running_info(
        properties={"consumeType": "CONSUME_PASSIVELY"},
        subscriptions=[SubscriptionData(topic="t")],
        queue_offsets={mq: {"commitOffset": 5}},
    )
    assert b'"mqTable":{{"brokerName":"b","queueId":0,"topic":"t"}:{"commitOffset":5}}' in info
    result = json.loads(
        bodies.encode_consume_directly_result(result="CR_SUCCESS", remark="ok", spent_ms=3)
    )
    assert result["consumeResult"] == "CR_SUCCESS" and result["spentTimeMills"] == 3


def test_message_queue_sort_order_is_topic_broker_queue() -> None:
    queues = [MessageQueue("b", "a", 0), MessageQueue("a", "b", 1), MessageQueue("a", "b", 0)]
    assert sorted(queues) == [queues[2], queues[1], queues[0]]


def test_fuzz_found_cluster_info_with_a_number_for_a_member_list() -> None:
    """Found by tests/fuzz (seed 7): a TypeError escaped the decoder."""
    from rocketmq_actors.protocol.bodies import ClusterInfo
    from rocketmq_actors.protocol.errors import ProtocolError

    body = b'{"brokerAddrTable":{},"clusterAddrTable":{"DefaultCluster":6}}'
    with pytest.raises(ProtocolError, match=r"bad-body|ClusterInfo"):
        ClusterInfo.decode(body)
