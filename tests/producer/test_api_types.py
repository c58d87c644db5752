"""Wrong types at the API are InvalidMessage naming the field, not a TypeError or an
AttributeError from deep inside (each case raised one of those before)."""

from __future__ import annotations

from typing import Any

import pytest

from rocketmq_actors.cluster.options import ClientOptions
from rocketmq_actors.errors import InvalidMessage
from rocketmq_actors.producer import Message, Producer


def _msg(**kwargs: Any) -> Any:
    values: dict[str, Any] = {"topic": "T", "body": b"x"}
    values.update(kwargs)
    return Message(**values)


CASES: list[tuple[str, Any, str]] = [
    ("str body", _msg(body="text"), "body must be bytes, not str"),
    ("int tag", _msg(tags=5), "tags must be a str, not int"),
    ("int key in a list", _msg(keys=[1]), "keys must be strings, not int"),
    ("int keys", _msg(keys=5), "keys must be strings, not int"),
    ("bytes keys", _msg(keys=b"k"), "keys must be strings, not bytes"),
    ("properties as a list", _msg(properties=[("a", "b")]), "properties must be a mapping"),
    ("int property value", _msg(properties={"a": 1}), "properties must map str to str"),
    ("int property name", _msg(properties={1: "a"}), "properties must map str to str"),
    ("int topic", _msg(topic=5), "topic must be a str"),
    ("str flag", _msg(flag="1"), "flag must be an int"),
    ("a bytes object", b"x", "expected a Message, not bytes"),
    ("a dict", {"topic": "T", "body": b"x"}, "expected a Message, not dict"),
    ("None", None, "expected a Message, not NoneType"),
]
SINGLE_ONLY: list[tuple[str, Any, str]] = [
    ("str delay_level", _msg(delay_level="1"), "delay_level must be an int, not str"),
    ("str delay_ms", _msg(delay_ms="5"), "delay_ms must be an int, not str"),
    ("float deliver_at_ms", _msg(deliver_at_ms=1.5), "deliver_at_ms must be an int, not float"),
]


@pytest.mark.parametrize(("what", "message", "error"), CASES + SINGLE_ONLY,
                         ids=[c[0] for c in CASES + SINGLE_ONLY])  # fmt: skip
@pytest.mark.parametrize("mode", ["send", "submit", "send_nowait", "send_oneway"])
async def test_wrong_types_in_a_send(what: str, message: Any, error: str, mode: str) -> None:
    producer = Producer(namesrv="127.0.0.1:1")  # never started: the check comes first
    with pytest.raises(InvalidMessage, match=error):
        await getattr(producer, mode)(message)


@pytest.mark.parametrize(("what", "message", "error"), CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("first", [True, False], ids=["first", "second"])
async def test_wrong_types_in_a_batch(what: str, message: Any, error: str, first: bool) -> None:
    producer = Producer(namesrv="127.0.0.1:1")
    if not first and what == "int topic":
        error = "same topic"  # (the batch's topic is the first message's)
    if not first and not isinstance(message, Message):
        error = "message 1 of the batch: " + error
    with pytest.raises(InvalidMessage, match=error):
        await producer.send_batch([message, _msg()] if first else [_msg(), message])


@pytest.mark.parametrize("batch", [_msg(), "abc", 5, None], ids=["a Message", "str", "int", "None"])
async def test_send_batch_wants_a_list(batch: Any) -> None:
    producer = Producer(namesrv="127.0.0.1:1")
    with pytest.raises(InvalidMessage, match="send_batch takes a list of messages"):
        await producer.send_batch(batch)


async def test_a_non_message_later_in_a_batch_is_named_by_index() -> None:
    producer = Producer(namesrv="127.0.0.1:1")
    with pytest.raises(InvalidMessage, match="message 1 of the batch: expected a Message"):
        await producer.send_batch([_msg(), "x"])  # type: ignore[list-item]


@pytest.mark.parametrize("mode", ["send", "submit", "send_nowait"])
async def test_a_non_message_with_tracing_on(mode: str) -> None:
    producer = Producer(namesrv="127.0.0.1:1", client=ClientOptions(tracing=True))
    with pytest.raises(InvalidMessage, match="expected a Message, not str"):
        await getattr(producer, mode)("body")


_SPANS: list[Any] = []  # the in-memory exporter of this module's tracing cases


@pytest.fixture
def spans() -> Any:
    """An in-memory exporter on the global tracer provider (set once per process: added to
    the one tests/test_tracing.py may have set)."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    if not _SPANS:
        provider = trace.get_tracer_provider()
        if not isinstance(provider, TracerProvider):
            provider = TracerProvider()
            trace.set_tracer_provider(provider)
        exporter = InMemorySpanExporter()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        _SPANS.append(exporter)
    exporter = _SPANS[0]
    exporter.clear()
    yield exporter
    exporter.clear()


@pytest.mark.parametrize(("what", "message", "error"), CASES + SINGLE_ONLY,
                         ids=[c[0] for c in CASES + SINGLE_ONLY])  # fmt: skip
@pytest.mark.parametrize("mode", ["send", "submit", "send_nowait"])
async def test_wrong_types_with_tracing_on(
    what: str, message: Any, error: str, mode: str, spans: Any
) -> None:
    """The span started before the message is validated is ended, with the error."""
    producer = Producer(namesrv="127.0.0.1:1", client=ClientOptions(tracing=True))
    with pytest.raises(InvalidMessage, match=error):
        await getattr(producer, mode)(message)
    if isinstance(message, Message):  # (a non-message is refused before any span)
        ended = spans.get_finished_spans()
        assert len(ended) == 1
        assert ended[0].attributes["error.type"].endswith("InvalidMessage")


@pytest.mark.parametrize(("what", "message", "error"), CASES + SINGLE_ONLY,
                         ids=[c[0] for c in CASES + SINGLE_ONLY])  # fmt: skip
@pytest.mark.parametrize("mode", ["send", "submit", "send_nowait", "send_oneway"])
async def test_wrong_types_with_a_value_serializer(
    what: str, message: Any, error: str, mode: str
) -> None:
    producer = Producer(namesrv="127.0.0.1:1", value_serializer=lambda v: repr(v).encode())
    with pytest.raises(InvalidMessage, match=error):
        await getattr(producer, mode)(message)


@pytest.mark.parametrize("body", [None, "text", 5], ids=["None", "str", "int"])
@pytest.mark.parametrize("tracing", [False, True], ids=["plain", "traced"])
async def test_a_value_with_a_body_of_the_wrong_type(body: Any, tracing: bool) -> None:
    producer = Producer(
        namesrv="127.0.0.1:1",
        value_serializer=lambda v: repr(v).encode(),
        client=ClientOptions(tracing=tracing),
    )
    with pytest.raises(InvalidMessage, match="body"):
        await producer.submit(Message(topic="T", body=body, value=1))
