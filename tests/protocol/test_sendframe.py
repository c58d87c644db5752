"""The pre-rendered send encoder must produce what the generic typed-header path produces."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_actors.protocol.codes import RequestCode
from rocketmq_actors.protocol.command import FLAG_ONEWAY, RemotingCommand
from rocketmq_actors.protocol.errors import ProtocolError
from rocketmq_actors.protocol.framing import decode_frame
from rocketmq_actors.protocol.headers import SendMessageRequestHeader
from rocketmq_actors.protocol.sendframe import BatchBody, SendFrameEncoder

_text = st.text(st.characters(blacklist_categories=["Cs"]), min_size=1, max_size=20)


@given(
    group=_text,
    topic=_text,
    broker=st.one_of(st.none(), _text),
    queue_id=st.integers(-1, 1000),
    sys_flag=st.integers(0, 0x7FF),
    flag=st.integers(-(2**31), 2**31 - 1),
    born=st.integers(0, 2**62),
    props=st.text(max_size=60),
    reconsume=st.one_of(st.none(), st.integers(0, 20)),
    max_reconsume=st.one_of(st.none(), st.integers(0, 20)),
    batch=st.booleans(),
    oneway=st.booleans(),
    opaque=st.integers(0, 2**31 - 1),
    body=st.binary(max_size=40),
    cut=st.integers(0, 40),
)
def test_fast_path_equals_generic_path(
    group: str,
    topic: str,
    broker: str | None,
    queue_id: int,
    sys_flag: int,
    flag: int,
    born: int,
    props: str,
    reconsume: int | None,
    max_reconsume: int | None,
    batch: bool,
    oneway: bool,
    opaque: int,
    body: bytes,
    cut: int,
) -> None:
    encoder = SendFrameEncoder(group)
    for _ in range(2):  # second round comes from the prefix cache
        fast = encoder.encode(
            opaque,
            topic,
            queue_id,
            body,
            born,
            props,
            broker,
            sys_flag=sys_flag,
            flag=flag,
            batch=batch,
            reconsume_times=reconsume,
            max_reconsume_times=max_reconsume,
            oneway=oneway,
        )
        header = SendMessageRequestHeader(
            producer_group=group,
            topic=topic,
            queue_id=queue_id,
            sys_flag=sys_flag,
            born_timestamp=born,
            flag=flag,
            properties=props or None,
            reconsume_times=reconsume,
            max_reconsume_times=max_reconsume,
            batch=True if batch else None,
            broker_name=broker or None,
        )
        generic = RemotingCommand(
            code=RequestCode.SEND_BATCH_MESSAGE if batch else RequestCode.SEND_MESSAGE_V2,
            opaque=opaque,
            flag=FLAG_ONEWAY if oneway else 0,
            ext_fields=header.to_ext(v2=True),
            body=body,
        )
        assert decode_frame(fast) == generic
        # a body in parts (a batch's records) makes the same frame
        parts = BatchBody([body[:cut], b"", body[cut:]], len(body))
        assert encoder.encode(
            opaque, topic, queue_id, parts, born, props, broker, sys_flag=sys_flag, flag=flag,
            batch=batch, reconsume_times=reconsume, max_reconsume_times=max_reconsume,
            oneway=oneway,
        ) == fast  # fmt: skip


def test_oversized_frame_is_refused() -> None:
    with pytest.raises(ProtocolError, match="frame-too-large"):
        SendFrameEncoder("g").encode(1, "t", 0, b"x" * (16 * 1024 * 1024), 0, "")


def test_with_credentials_frames_are_signed_over_every_field_and_the_body() -> None:
    from rocketmq_actors.protocol.acl import AclCredentials, sign

    creds = AclCredentials("ak", "sk")
    frame = SendFrameEncoder("g", credentials=creds).encode(
        7, "T", 2, b"body", 1234, "KEYS\x01k\x02", "broker-a", batch=True
    )
    header = SendMessageRequestHeader(
        producer_group="g", topic="T", queue_id=2, born_timestamp=1234,
        properties="KEYS\x01k\x02", batch=True, broker_name="broker-a",
    )  # fmt: skip
    decoded = decode_frame(frame)
    assert decoded.code == RequestCode.SEND_BATCH_MESSAGE and decoded.opaque == 7
    assert decoded.ext_fields == sign(header.to_ext(v2=True), b"body", creds)
    assert decoded.ext_fields["AccessKey"] == "ak" and "Signature" in decoded.ext_fields
    # the signature covers the body: another body, another signature
    other = decode_frame(
        SendFrameEncoder("g", credentials=creds).encode(
            7, "T", 2, b"BODY", 1234, "KEYS\x01k\x02", "broker-a", batch=True
        )
    )
    assert other.ext_fields["Signature"] != decoded.ext_fields["Signature"]
    # a body in parts is signed as the joined body
    in_parts = SendFrameEncoder("g", credentials=creds).encode(
        7, "T", 2, BatchBody([b"bo", b"dy"], 4), 1234, "KEYS\x01k\x02", "broker-a", batch=True
    )
    assert decode_frame(in_parts) == decoded
