"""QUERY_ASSIGNMENT bodies as Java's QueryAssignmentRequestBody / QueryAssignmentResponseBody
write them (fastjson: a set as a list, a queue as an object)."""

from __future__ import annotations

import json

import pytest

from rocketmq_actors.protocol.assignment import (
    Assignment,
    decode_assignments,
    encode_query_assignment,
)
from rocketmq_actors.protocol.bodies import MessageQueue
from rocketmq_actors.protocol.errors import ProtocolError


def test_the_request_names_what_the_broker_reads() -> None:
    body = json.loads(encode_query_assignment("T", "G", "10.0.0.1@1", "AVG", "CLUSTERING"))
    assert body == {"topic": "T", "consumerGroup": "G", "clientId": "10.0.0.1@1",
                    "strategyName": "AVG", "messageModel": "CLUSTERING"}  # fmt: skip


def test_a_reply_gives_each_queue_with_its_mode() -> None:
    reply = (
        b'{"messageQueueAssignments":[{"attachments":{},"messageQueue":{"brokerName":"b",'
        b'"queueId":-1,"topic":"T"},"mode":"POP"},{"messageQueue":{"brokerName":"a",'
        b'"queueId":3,"topic":"T"},"mode":"PULL"},{"mode":"PULL"}]}'
    )
    assert decode_assignments(reply) == [
        Assignment(MessageQueue("T", "b", -1), "POP"),
        Assignment(MessageQueue("T", "a", 3), "PULL"),
    ]  # (one without a queue is skipped, as Java skips it)


def test_no_assignments_means_keep_what_you_have_and_an_empty_list_release_all() -> None:
    assert decode_assignments(b"{}") is None  # the broker could not compute them
    assert decode_assignments(b'{"messageQueueAssignments":[]}') == []


@pytest.mark.parametrize(
    "body",
    [
        b"[]",
        b'{"messageQueueAssignments":{}}',
        b'{"messageQueueAssignments":[1]}',
        b'{"messageQueueAssignments":[{"messageQueue":{"topic":"T"},"mode":"PUSH"}]}',
        b'{"messageQueueAssignments":[{"messageQueue":"x","mode":"PULL"}]}',
        b"{",
    ],
)
def test_a_malformed_reply_is_a_protocol_error(body: bytes) -> None:
    with pytest.raises(ProtocolError):
        decode_assignments(body)
