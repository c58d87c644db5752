"""PUSH_REPLY_MESSAGE_TO_CLIENT (326) decoded into ReplyPushed, owned by its correlation id."""

from __future__ import annotations

import pytest

from rocketmq_actors.protocol.codes import RequestCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.protocol.errors import ProtocolError
from rocketmq_actors.protocol.events import ReplyPushed, decode_broker_request
from rocketmq_actors.protocol.messages import encode_properties


def _push(properties: dict[str, str], body: bytes = b"pong", **ext: str) -> RemotingCommand:
    fields = {"producerGroup": "R", "topic": "C_REPLY_TOPIC", "queueId": "0",
              "properties": encode_properties(properties), "bornHost": "/10.0.0.1:5",
              "storeHost": "/10.0.0.2:10911", "storeTimestamp": "7", **ext}  # fmt: skip
    return RemotingCommand.request(RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, fields, body)


def test_a_pushed_reply_is_owned_by_its_correlation_id() -> None:
    event = decode_broker_request(_push({"CORRELATION_ID": "c-1", "MSG_TYPE": "reply"}))
    assert isinstance(event, ReplyPushed) and event.group == "c-1"
    message = event.message
    assert message.body == b"pong" and message.correlation_id == "c-1"
    assert message.born_host == "10.0.0.1:5" and message.store_host == "10.0.0.2:10911"
    assert message.producer_group == "R" and message.store_timestamp == 7


def test_a_pushed_reply_without_correlation_id_is_malformed() -> None:
    with pytest.raises(ProtocolError, match="CORRELATION_ID"):
        decode_broker_request(_push({"MSG_TYPE": "reply"}))


def test_a_pushed_reply_whose_body_is_not_what_its_sys_flag_says_is_malformed() -> None:
    with pytest.raises(ProtocolError):
        decode_broker_request(_push({"CORRELATION_ID": "c"}, b"not zlib", sysFlag="1"))
