"""Trace records byte for byte as the Java client's TraceDataEncoder (5.3.3) writes them: the
vectors in fixtures/trace_vectors.json come from fixtures/TraceVectors.java, which builds the
same records with the Java classes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rocketmq_actors.protocol.errors import ProtocolError
from rocketmq_actors.protocol.trace import (
    CONTENT_SPLITOR,
    FIELD_SPLITOR,
    EndTransactionRecord,
    PubRecord,
    SubAfterRecord,
    SubBeforeRecord,
    TraceMessageType,
    TraceRecord,
    decode_records,
    encode_record,
)

VECTORS = {
    v["case"]: v
    for v in json.loads((Path(__file__).parent / "fixtures" / "trace_vectors.json").read_text())
}
ID1, ID2 = "7F0000010F2A18B4AAC27B8A2D5B0000", "7F0000010F2A18B4AAC27B8A2D5B0001"
OFF1 = "7F00000100002A9F0000000000000A3C"
REQ1 = "0A000001000018B4AAC2000000000001"

# the records TraceVectors.java builds, case by case (a Java batch context of two beans is two
# of ours with the same request id)
CASES: dict[str, list[TraceRecord]] = {
    "pub": [
        PubRecord(timestamp=1700000000123, region_id="DefaultRegion", group="PG", topic="orders",
                  msg_id=ID1, tags="paid", keys="k1 k2", store_host="127.0.0.1:10911",
                  body_length=5, cost_ms=12, msg_type=TraceMessageType.NORMAL,
                  offset_msg_id=OFF1, success=True)
    ],
    "pub_no_tags_half": [
        PubRecord(timestamp=1700000000999, region_id="DefaultRegion", group="TXG", topic="orders",
                  msg_id=ID2, tags=None, keys=None, store_host="10.1.2.3:10911", body_length=0,
                  cost_ms=0, msg_type=TraceMessageType.TRANS_HALF, offset_msg_id=OFF1,
                  success=False)
    ],
    "pub_delay": [
        PubRecord(timestamp=1700000001000, region_id="r1", group="PG", topic="orders", msg_id=ID2,
                  tags="t", keys="only", store_host="127.0.0.1:10911", body_length=1024,
                  cost_ms=3, msg_type=TraceMessageType.DELAY, offset_msg_id=OFF1, success=True)
    ],
    "sub_before": [
        SubBeforeRecord(timestamp=1700000002000, region_id="DefaultRegion", group="CG",
                        request_id=REQ1, msg_id=ID1, retry_times=2, keys="k1")
    ],
    "sub_before_batch": [
        SubBeforeRecord(timestamp=1700000002001, region_id="DefaultRegion", group="CG",
                        request_id="0A000001000018B4AAC2000000000002", msg_id=msg_id,
                        retry_times=0, keys=keys)
        for msg_id, keys in ((ID1, "k1 k2"), (ID2, None))
    ],
    "sub_after": [
        SubAfterRecord(request_id=REQ1, msg_id=ID1, cost_ms=50, success=True, keys="k1",
                       context_code=0, timestamp=1700000002050, group="CG")
    ],
    "sub_after_exception": [
        SubAfterRecord(request_id="0A000001000018B4AAC2000000000003", msg_id=ID2, cost_ms=7,
                       success=False, keys=None, context_code=2, timestamp=1700000002060,
                       group="CG")
    ],
    "end_transaction": [
        EndTransactionRecord(timestamp=1700000003000, region_id="DefaultRegion", group="TXG",
                             topic="orders", msg_id=ID1, tags="tx", keys="k9",
                             store_host="127.0.0.1:10911", transaction_id=ID1,
                             transaction_state="COMMIT_MESSAGE", from_check=False)
    ],
    "end_transaction_check": [
        EndTransactionRecord(timestamp=1700000003001, region_id="DefaultRegion", group="TXG",
                             topic="orders", msg_id=ID2, tags=None, keys=None,
                             store_host="127.0.0.1:10911", transaction_id=ID2,
                             transaction_state="ROLLBACK_MESSAGE", from_check=True)
    ],
    "end_transaction_unknown": [
        EndTransactionRecord(timestamp=1700000003002, region_id="DefaultRegion", group="TXG",
                             topic="orders", msg_id=ID2, tags="t", keys="k",
                             store_host="127.0.0.1:10911", transaction_id=ID2,
                             transaction_state="UNKNOW", from_check=False)
    ],
}  # fmt: skip


def test_every_java_vector_has_a_case() -> None:
    assert set(CASES) == set(VECTORS)


@pytest.mark.parametrize("case", sorted(CASES))
def test_encoded_as_java(case: str) -> None:
    encoded = [encode_record(r) for r in CASES[case]]
    assert "".join(text for text, _ in encoded) == VECTORS[case]["data"]
    # Java's key set (a HashSet: its order is not kept)
    assert {k for _, keys in encoded for k in keys} == set(VECTORS[case]["keys"])


@pytest.mark.parametrize("case", sorted(CASES))
def test_java_records_decoded(case: str) -> None:
    decoded = decode_records(VECTORS[case]["data"].encode())
    assert len(decoded) == VECTORS[case]["decoded"]
    assert decoded == CASES[case]


def test_several_records_in_one_body_and_unknown_types_skipped() -> None:
    body = (
        VECTORS["pub"]["data"]
        + f"Recall{CONTENT_SPLITOR}1{CONTENT_SPLITOR}r{FIELD_SPLITOR}"  # 5.5's: not ours
        + VECTORS["sub_after"]["data"]
    )
    assert decode_records(body) == CASES["pub"] + CASES["sub_after"]


def test_old_layouts_decoded() -> None:
    # a 4.x SubAfter (no group) and a Pub without its offset message id
    sub_after = CONTENT_SPLITOR.join(["SubAfter", REQ1, ID1, "5", "true", "k", "0", "17"])
    pub = CONTENT_SPLITOR.join(
        ["Pub", "1", "R", "G", "T", ID1, "null", "null", "h:1", "3", "4", "0", "true"]
    )
    after, before = decode_records(sub_after + FIELD_SPLITOR + pub + FIELD_SPLITOR)
    assert isinstance(after, SubAfterRecord) and after.timestamp == 17 and after.group == ""
    assert isinstance(before, PubRecord) and before.offset_msg_id is None and before.success


@pytest.mark.parametrize(
    "body",
    [
        b"Pub\x01x\x01R\x01G\x01T\x01i\x01t\x01k\x01h\x011\x012\x010\x01o\x01true\x02",
        b"SubBefore\x011\x02",
        b"Pub\x011\x01R\x01G\x01T\x01i\x01t\x01k\x01h\x011\x012\x019\x01o\x01true\x02",
        b"\xff\xfe",
    ],
)
def test_malformed_records_are_protocol_errors(body: bytes) -> None:
    with pytest.raises(ProtocolError):
        decode_records(body)
