"""Recall handles as Java builds and reads them (fixtures/RecallHandles.java ->
recall_handles.json), and RECALL_MESSAGE's headers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rocketmq_actors.protocol.codes import RequestCode
from rocketmq_actors.protocol.errors import ProtocolError
from rocketmq_actors.protocol.headers import SendMessageResponseHeader
from rocketmq_actors.protocol.recall import (
    RecallHandle,
    RecallMessageRequestHeader,
    RecallMessageResponseHeader,
)

_VECTORS = json.loads((Path(__file__).parent / "fixtures" / "recall_handles.json").read_text())


@pytest.mark.parametrize("case", _VECTORS["built"], ids=lambda c: c["topic"])
def test_a_handle_built_by_java_decodes_to_its_parts(case: dict[str, Any]) -> None:
    handle = RecallHandle.decode(case["handle"])
    assert handle == RecallHandle(topic=case["topic"], broker_name=case["broker_name"],
                                  deliver_at_ms=int(case["timestamp"]),
                                  msg_id=case["msg_id"])  # fmt: skip
    assert handle.encode() == case["handle"]  # byte for byte what HandleV1.buildHandle makes


@pytest.mark.parametrize("handle", _VECTORS["refused"])
def test_what_java_refuses_is_refused(handle: str) -> None:
    with pytest.raises(ProtocolError) as info:
        RecallHandle.decode(handle)
    assert info.value.reason == "bad-recall-handle"


@pytest.mark.parametrize(
    "handle",
    [None, 42, b"djEgVCBiIDEgWA==", "djEgVCBiIHNvb24gWA==", "djEgIGIgMSBY", "/+8=",
     "djEgVCBiIDEgWA"],
    ids=["None", "int", "bytes", "time not a number", "empty topic", "not url-safe", "unpadded"],
)  # fmt: skip
def test_stricter_than_java_but_unpadded_is_fine(handle: object) -> None:
    if handle == "djEgVCBiIDEgWA":  # Java's URL decoder takes a handle without its padding
        assert RecallHandle.decode(handle).msg_id == "X"
        return
    with pytest.raises(ProtocolError, match="bad-recall-handle"):
        RecallHandle.decode(handle)


def test_request_and_response_headers() -> None:
    header = RecallMessageRequestHeader(producer_group="PG", topic="T", recall_handle="h",
                                        broker_name="broker-a")  # fmt: skip
    assert header.to_ext() == {"producerGroup": "PG", "topic": "T", "recallHandle": "h",
                               "bname": "broker-a"}  # fmt: skip
    assert RecallMessageResponseHeader.from_ext({"msgId": "ID"}).msg_id == "ID"
    with pytest.raises(ProtocolError):
        RecallMessageResponseHeader.from_ext({})
    assert int(RequestCode.RECALL_MESSAGE) == 370


def test_the_send_response_carries_the_handle() -> None:
    ext = {"msgId": "M", "queueId": "0", "queueOffset": "3", "recallHandle": "djEgVCBiIDEgWA=="}
    assert SendMessageResponseHeader.from_ext(ext).recall_handle == "djEgVCBiIDEgWA=="
    del ext["recallHandle"]
    assert SendMessageResponseHeader.from_ext(ext).recall_handle is None
