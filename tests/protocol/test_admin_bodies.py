"""Administration bodies in the fastjson dialect brokers write (object map keys)."""

from __future__ import annotations

import contextlib
import json

import pytest

from rocketmq_actors.protocol.admin_bodies import (
    ConsumerConnection,
    ConsumeStats,
    decode_kv_table,
    decode_message_request_modes,
    decode_subscription_groups,
    decode_topic_stats,
    encode_message_request_mode,
)
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.errors import ProtocolError

Q0 = '{"brokerName":"broker-a","queueId":0,"topic":"T"}'
Q1 = '{"brokerName":"broker-a","queueId":1,"topic":"T"}'


def test_topic_stats_with_object_keys_sorted_by_queue() -> None:
    body = (
        '{"offsetTable":{'
        + Q1
        + ':{"lastUpdateTimestamp":7,"maxOffset":9,"minOffset":2},'
        + Q0
        + ':{"lastUpdateTimestamp":0,"maxOffset":0,"minOffset":0}},"topicPutTps":0.0}'
    ).encode()
    stats = decode_topic_stats(body)
    assert list(stats) == [MessageQueue("T", "broker-a", 0), MessageQueue("T", "broker-a", 1)]
    one = stats[MessageQueue("T", "broker-a", 1)]
    assert (one.min_offset, one.max_offset, one.last_update_timestamp) == (2, 9, 7)


def test_consume_stats_lag_never_negative() -> None:
    body = (
        '{"consumeTps":1.5,"offsetTable":{' + Q0 + ':{"brokerOffset":10,"consumerOffset":4,'
        '"lastTimestamp":5,"pullOffset":10},' + Q1 + ':{"brokerOffset":3,"consumerOffset":5,'
        '"lastTimestamp":0,"pullOffset":0}}}'
    ).encode()
    stats = ConsumeStats.decode(body)
    assert [w.lag for w in stats.offsets.values()] == [6, 0] and stats.consume_tps == 1.5


def test_consumer_connection() -> None:
    body = (
        b'{"connectionSet":[{"clientAddr":"127.0.0.1:5","clientId":"b","language":"JAVA",'
        b'"version":453},{"clientAddr":"127.0.0.1:6","clientId":"a","language":"PYTHON",'
        b'"version":479}],"consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","consumeType":'
        b'"CONSUME_PASSIVELY","messageModel":"CLUSTERING","subscriptionTable":{"T":'
        b'{"classFilterMode":false,"codeSet":[],"expressionType":"TAG","subString":"a || b",'
        b'"subVersion":1,"tagsSet":["a","b"],"topic":"T"}}}'
    )
    conn = ConsumerConnection.decode(body)
    assert [c.client_id for c in conn.connections] == ["a", "b"]
    assert conn.connections[0].language == "PYTHON" and conn.connections[1].version == 453
    assert conn.subscriptions == {"T": "a || b"} and conn.message_model == "CLUSTERING"


def test_kv_table_and_groups() -> None:
    assert decode_kv_table(b'{"table":{"putTps":"1.0 2.0 3.0","a":"b"}}') == {
        "a": "b", "putTps": "1.0 2.0 3.0"
    }  # fmt: skip
    groups = decode_subscription_groups(
        b'{"dataVersion":{"counter":1,"timestamp":2},"forbiddenTable":{},'
        b'"subscriptionGroupTable":{"G":{"brokerId":0,"consumeBroadcastEnable":true,'
        b'"consumeEnable":false,"consumeMessageOrderly":true,"groupName":"G",'
        b'"retryMaxTimes":3,"retryQueueNums":1}}}'
    )
    assert groups == {"G": {"consume_enable": False, "consume_broadcast_enable": True,
                            "consume_orderly": True, "retry_queue_nums": 1,
                            "retry_max_times": 3}}  # fmt: skip


@pytest.mark.parametrize(
    "decode",
    [decode_topic_stats, ConsumeStats.decode, ConsumerConnection.decode, decode_kv_table,
     decode_subscription_groups],
)  # fmt: skip
@pytest.mark.parametrize(
    "body",
    [b"[]", b'{"offsetTable":[1]}', b'{"offsetTable":{"x":1}}', b'{"table":3}',
     b'{"connectionSet":{}}', b'{"subscriptionGroupTable":{"G":1}}', b"{", b"\xff"],
)  # fmt: skip
def test_malformed_bodies_are_protocol_errors(decode: object, body: bytes) -> None:
    """Whatever a peer sends: a typed ProtocolError or a value, never a raw error."""
    with contextlib.suppress(ProtocolError):
        decode(body)  # type: ignore[operator]


def test_message_request_modes_decode_and_refuse_a_bad_shape() -> None:
    body = (b'{"messageRequestModeMap": {"T": {"G": {"topic": "T", "consumerGroup": "G", '
            b'"mode": "POP", "popShareQueueNum": 2}}}}')  # fmt: skip
    assert decode_message_request_modes(body) == {
        "T": {"G": {"mode": "POP", "pop_share_queue_num": 2}}
    }
    assert decode_message_request_modes(b"{}") == {}
    for bad in (b'{"T": 3}', b'{"T": {"G": 1}}', b'{"T": {"G": {"popShareQueueNum": "2"}}}'):
        with pytest.raises(ProtocolError):
            decode_message_request_modes(b'{"messageRequestModeMap": %s}' % bad)
    sent = json.loads(encode_message_request_mode("T", "G", "PULL", 0))
    assert sent == {"topic": "T", "consumerGroup": "G", "mode": "PULL", "popShareQueueNum": 0}
