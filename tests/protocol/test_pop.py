"""POP on the wire against what the Java client 5.3.3 makes: tests/protocol/fixtures/
pop_java.jsonl is tests/java/JavaPopHandles.java's output (ExtraInfoUtil handles and offset
infos, a BATCH_ACK_MESSAGE body, the request headers' ext fields); the last test runs the Java
program again and checks the fixture is still what it prints."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rocketmq_actors.protocol.errors import ProtocolError
from rocketmq_actors.protocol.pop import (
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    ExtraInfo,
    PopMessageRequestHeader,
    PopMessageResponseHeader,
    PoppedMessage,
    encode_batch_ack,
    message_handles,
    parse_offset_info,
    retry_flag,
)

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "pop_java.jsonl"
SOURCE = Path(__file__).resolve().parents[1] / "java" / "JavaPopHandles.java"


def _java() -> dict[str, Any]:
    lines = [json.loads(line) for line in FIXTURE.read_text().splitlines()]
    return {line["kind"]: line["value"] for line in lines}


JAVA = _java()


@pytest.mark.parametrize("case", JAVA["handles"], ids=lambda c: c["topic"])
def test_a_handle_made_by_java_parses_and_encodes_back(case: dict[str, Any]) -> None:
    eight = ExtraInfo.parse(case["eight"])
    assert eight.encode() == case["eight"]
    assert (eight.ck_queue_offset, eight.pop_time, eight.invisible_time) == (
        100, 1732500000123, 60000
    )  # fmt: skip
    assert (eight.revive_qid, eight.broker_name, eight.queue_id, eight.offset) == (
        3, "broker-a", 2, 105
    )  # fmt: skip
    assert eight.retry == retry_flag(case["topic"])
    assert eight.real_topic("orders", "billing") == case["realTopic"]
    assert eight.orderly is case["isOrder"]
    seven = ExtraInfo.parse(case["seven"])
    assert seven.encode() == case["seven"]
    assert seven.queue_offset is None and seven.offset == 100 and seven.orderly


@pytest.mark.parametrize(
    "text",
    ["", "1 2 3", "a 1 60000 3 0 b 2 5", "1 2 3 4 9 b 2", "1 2 3 4 0 b 2 5 6", "1 2 3 4 0 b x"],
)
def test_a_malformed_handle_is_a_protocol_error(text: str) -> None:
    with pytest.raises(ProtocolError):
        ExtraInfo.parse(text)


def test_offset_infos_made_by_java_parse_as_java_parses_them() -> None:
    infos = JAVA["infos"]
    assert {k: v[0] for k, v in parse_offset_info(infos["startOffsetInfo"]).items()} == (
        infos["parsedStart"]
    )
    assert parse_offset_info(infos["msgOffsetInfo"]) == infos["parsedMsgs"]
    assert {k: v[0] for k, v in parse_offset_info(infos["orderCountInfo"]).items()} == (
        infos["parsedCounts"]
    )
    assert parse_offset_info(None) == {} and parse_offset_info("") == {}
    for bad in ("0 0", "0 0 1;0 0 2", "0 0 x"):
        with pytest.raises(ProtocolError):
            parse_offset_info(bad)


def test_each_popped_message_gets_the_handle_java_builds() -> None:
    infos = JAVA["infos"]
    header = PopMessageResponseHeader(
        pop_time=1732500000123, invisible_time=60000, revive_qid=999, rest_num=0,
        start_offset_info=infos["startOffsetInfo"], msg_offset_info=infos["msgOffsetInfo"],
        order_count_info=infos["orderCountInfo"],
    )  # fmt: skip
    popped = [
        PoppedMessage("orders", 0, 100, 0),
        PoppedMessage("orders", 0, 101, 0),
        PoppedMessage("%RETRY%billing+orders", 3, 7, 1),
    ]
    handles = message_handles(popped, header, broker_name="broker-a", order=True)
    assert [h.encode() for h, _ in handles] == [
        "100 1732500000123 60000 999 0 broker-a 0 100",
        "100 1732500000123 60000 999 0 broker-a 0 101",
        "7 1732500000123 60000 999 2 broker-a 3 7",
    ]
    # orderly: the count of that offset, else of its queue (none here for queue 3)
    assert [count for _, count in handles] == [2, None, None]
    # an old broker without offset infos: the first message of a queue is the check point
    bare = PopMessageResponseHeader(pop_time=5, invisible_time=6, revive_qid=1, rest_num=0)
    old = message_handles(popped[:2], bare, broker_name="b", order=False)
    assert [h.encode() for h, _ in old] == ["100 5 6 1 0 b 0 100", "100 5 6 1 0 b 0 101"]
    # a retry the broker rewrote to the topic asked for carries its handle (POP_CK)
    ck = "3 1732500000123 60000 999 1 broker-a 1 3"
    rewritten = message_handles([PoppedMessage("orders", 1, 3, 1, ck)], header,
                                broker_name="broker-a", order=True)  # fmt: skip
    assert [(h.encode(), count) for h, count in rewritten] == [(ck, None)]
    with pytest.raises(ProtocolError):  # a queue the infos do not name
        message_handles([PoppedMessage("orders", 5, 1, 0)], header, broker_name="b", order=False)


def test_a_batch_ack_body_is_the_one_java_merges() -> None:
    batch = JAVA["batchAck"]
    handles = [ExtraInfo.parse(e) for e in batch["extraInfos"]]
    ours = json.loads(encode_batch_ack("billing", "orders", handles))
    assert ours == json.loads(batch["body"])
    with pytest.raises(ProtocolError):
        encode_batch_ack("billing", "orders", [])


def test_the_request_headers_carry_the_fields_java_sends() -> None:
    java = JAVA["headers"]
    pop = PopMessageRequestHeader(
        consumer_group="billing", topic="orders", queue_id=-1, max_msg_nums=32,
        invisible_time=60000, poll_time=15000, born_time=1732500000000, init_mode=1,
        exp_type="TAG", exp="paid || refunded", order=True, broker_name="broker-a",
    )  # fmt: skip
    assert pop.to_ext() == java["pop"]
    ack = AckMessageRequestHeader(
        consumer_group="billing", topic="%RETRY%billing+orders", queue_id=3,
        extra_info="7 1732500000123 60000 3 2 broker-a 3 7", offset=7, broker_name="broker-a",
    )  # fmt: skip
    assert ack.to_ext() == java["ack"]
    change = ChangeInvisibleTimeRequestHeader(
        consumer_group="billing", topic="orders", queue_id=0,
        extra_info="100 1732500000123 60000 3 0 broker-a 0 101", offset=101,
        invisible_time=10000, broker_name="broker-a",
    )  # fmt: skip
    assert change.to_ext() == java["change"]
    assert PopMessageRequestHeader.from_ext(java["pop"]) == pop


@pytest.mark.integration
def test_the_fixture_is_what_the_java_client_prints() -> None:
    from rocketmq_actors.testing.java import run_java

    lines = run_java(SOURCE, heap_mb=256, timeout=300)
    assert {line["kind"]: line["value"] for line in lines} == JAVA
