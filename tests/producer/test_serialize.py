"""value_serializer: a message's value becomes its body before any network I/O."""

from __future__ import annotations

import json
from typing import Any

import pytest

from rocketmq_actors.errors import ClientNotStarted, ConfigError, InvalidMessage
from rocketmq_actors.producer import Message, Producer, TransactionProducer
from rocketmq_actors.producer.serialize import serialize, serialize_all


def _json(value: Any) -> bytes:
    return json.dumps(value).encode()


def test_the_value_becomes_the_body() -> None:
    msg = serialize(Message(topic="T", value={"id": 1}, tags="a"), _json)
    assert msg.body == b'{"id": 1}' and msg.value is None and msg.tags == "a"


def test_a_body_without_value_is_sent_as_it_is() -> None:
    msg = Message(topic="T", body=b"raw")
    assert serialize(msg, _json) is msg


def test_body_and_value_together_is_refused() -> None:
    with pytest.raises(InvalidMessage, match=r"body .* or a value, not both"):
        serialize(Message(topic="T", body=b"x", value=1), _json)


def test_a_failing_serializer_is_invalid_message_naming_value_and_chained() -> None:
    def bad(value: object) -> bytes:
        raise TypeError("not JSON serializable")

    with pytest.raises(
        InvalidMessage, match="value_serializer failed on the message's value"
    ) as info:
        serialize(Message(topic="T", value=object()), bad)
    assert isinstance(info.value.__cause__, TypeError)


def test_a_serializer_returning_text_is_refused() -> None:
    with pytest.raises(InvalidMessage, match="must return bytes, it returned str"):
        serialize(Message(topic="T", value=1), str)  # type: ignore[arg-type]


def test_a_batch_is_serialized_message_by_message() -> None:
    plain = [Message(topic="T", body=b"x")]
    assert serialize_all(plain, _json) is plain  # nothing to do: the same list
    out = serialize_all([Message(topic="T", value=[1]), Message(topic="T", body=b"y")], _json)
    assert [m.body for m in out] == [b"[1]", b"y"]


def test_a_non_callable_serializer_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="value_serializer must be callable"):
        Producer(namesrv="127.0.0.1:1", value_serializer="json")  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", ["send", "submit", "send_nowait", "send_oneway", "send_batch"])
async def test_a_value_without_serializer_is_refused_before_any_io(mode: str) -> None:
    producer = Producer(namesrv="127.0.0.1:1")  # never started: no I/O is possible
    msg = Message(topic="T", value={"a": 1})
    call = getattr(producer, mode)
    with pytest.raises(InvalidMessage, match="has no value_serializer"):
        await (call([msg, msg]) if mode == "send_batch" else call(msg))


@pytest.mark.parametrize("mode", ["send", "submit", "send_nowait", "send_oneway", "send_batch"])
async def test_serializer_errors_come_before_any_io(mode: str) -> None:
    producer = Producer(namesrv="127.0.0.1:1", value_serializer=_json)
    call = getattr(producer, mode)
    msg = Message(topic="T", value=object())
    with pytest.raises(InvalidMessage, match="value_serializer failed"):
        await (call([msg]) if mode == "send_batch" else call(msg))
    # a good value gets past serialization: the producer is simply not started
    good = Message(topic="T", value={"a": 1})
    with pytest.raises(ClientNotStarted):
        await (call([good]) if mode == "send_batch" else call(good))


async def test_transaction_producer_serializes_too() -> None:
    async def check(message: object) -> Any:
        raise AssertionError

    producer = TransactionProducer(namesrv="127.0.0.1:1", checker=check, value_serializer=_json)
    prepared = producer._group.prepare(Message(topic="T", value={"x": 2}))
    assert prepared.body == b'{"x": 2}'
    with pytest.raises(InvalidMessage, match="value_serializer failed"):
        producer._group.prepare(Message(topic="T", value={1, 2}))
