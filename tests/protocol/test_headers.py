from __future__ import annotations

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_actors.protocol import headers as h
from rocketmq_actors.protocol.errors import ProtocolError


def test_send_header_long_and_letter_names() -> None:
    header = h.SendMessageRequestHeader(
        producer_group="pg",
        topic="t",
        queue_id=2,
        born_timestamp=123,
        properties="a\x01b\x02",
        broker_name="broker-a",
    )
    assert header.to_ext() == {
        "producerGroup": "pg",
        "topic": "t",
        "defaultTopic": "TBW102",
        "defaultTopicQueueNums": "4",
        "queueId": "2",
        "sysFlag": "0",
        "bornTimestamp": "123",
        "flag": "0",
        "properties": "a\x01b\x02",
        "unitMode": "false",
        "bname": "broker-a",
    }
    v2 = header.to_ext(v2=True)
    assert v2 == {
        "a": "pg",
        "b": "t",
        "c": "TBW102",
        "d": "4",
        "e": "2",
        "f": "0",
        "g": "123",
        "h": "0",
        "i": "a\x01b\x02",
        "k": "false",
        "n": "broker-a",
    }
    assert h.SendMessageRequestHeader.from_ext(v2, v2=True) == header
    assert h.SendMessageRequestHeader.from_ext(header.to_ext()) == header


def test_response_header_from_real_broker_fields() -> None:
    ext = {
        "queueId": "0",
        "transactionId": "C0A8",
        "msgId": "7F00000100005BD70000000000000000",
        "TRACE_ON": "true",
        "MSG_REGION": "DefaultRegion",
        "queueOffset": "0",
    }
    parsed = h.SendMessageResponseHeader.from_ext(ext)
    assert parsed.queue_offset == 0 and parsed.region_id == "DefaultRegion"


def test_missing_required_field() -> None:
    with pytest.raises(ProtocolError, match="missing-header-field"):
        h.PullMessageResponseHeader.from_ext({"nextBeginOffset": "1", "minOffset": "0"})


def test_malformed_number() -> None:
    with pytest.raises(ProtocolError, match="bad-header-field"):
        h.OffsetResponseHeader.from_ext({"offset": "12x"})


def test_booleans_and_omitted_optionals() -> None:
    end = h.EndTransactionRequestHeader(
        producer_group="pg",
        tran_state_table_offset=5,
        commit_log_offset=6,
        commit_or_rollback=8,
        msg_id="m",
        from_transaction_check=True,
    )
    ext = end.to_ext()
    assert ext["fromTransactionCheck"] == "true" and "transactionId" not in ext
    assert h.EndTransactionRequestHeader.from_ext(ext) == end
    reset = h.ResetOffsetRequestHeader.from_ext(
        {"topic": "t", "group": "g", "timestamp": "1", "isForce": "TRUE"}
    )
    assert reset.is_force is True


ALL_HEADERS = [
    getattr(h, name) for name in h.__all__ if name.endswith("Header") and name != "Header"
]


@pytest.mark.parametrize("cls", ALL_HEADERS, ids=lambda c: c.__name__)
def test_every_header_round_trips_with_sample_values(cls: type[h.Header]) -> None:
    sample: dict[str, object] = {}
    for spec in cls.specs():
        sample[spec.attr] = {"int": 7, "bool": True, "str": "v"}[spec.kind]
    header = cls(**sample)
    assert cls.from_ext(header.to_ext()) == header
    assert cls.from_ext(header.to_ext(v2=True), v2=True) == header
    assert set(header.to_ext()) == {spec.wire for spec in cls.specs()}


_values = {
    "int": st.integers(-(2**63), 2**63 - 1),
    "bool": st.booleans(),
    "str": st.text(st.characters(blacklist_categories=["Cs"]), min_size=1, max_size=16),
}


@pytest.mark.parametrize("cls", ALL_HEADERS, ids=lambda c: c.__name__)
@given(data=st.data())
def test_every_header_round_trips_any_values(cls: type[h.Header], data: st.DataObject) -> None:
    sample = {}
    for spec in cls.specs():
        strategy = _values[spec.kind]
        if spec.nullable:
            strategy = st.one_of(st.none(), strategy)
        sample[spec.attr] = data.draw(strategy, label=spec.attr)
    header = cls(**sample)
    for v2 in (False, True):
        assert cls.from_ext(header.to_ext(v2=v2), v2=v2) == header


@pytest.mark.parametrize("cls", ALL_HEADERS, ids=lambda c: c.__name__)
def test_only_nullable_fields_default_to_none(cls: type[h.Header]) -> None:
    """None means "omit"; a non-nullable field defaulting to None would not round-trip."""
    for field, spec in zip(attrs.fields(cls), cls.specs(), strict=True):  # type: ignore[arg-type]
        if field.default is None:
            assert spec.nullable, f"{cls.__name__}.{spec.attr}"
