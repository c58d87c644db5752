from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_actors.protocol import jsonlax
from rocketmq_actors.protocol.errors import ProtocolError


def test_standard_json_passes_through() -> None:
    assert jsonlax.loads(b'{"a":[1,2.5,true,null,"x"]}') == {"a": [1, 2.5, True, None, "x"]}


def test_unquoted_integer_keys() -> None:
    assert jsonlax.loads(b'{"brokerAddrs":{0:"a:1",1:"b:2"}}') == {
        "brokerAddrs": {0: "a:1", 1: "b:2"}
    }


def test_object_keys_become_hashable_mappings() -> None:
    raw = b'{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"t"}:42}}'
    table = jsonlax.loads(raw)["offsetTable"]
    ((key, value),) = table.items()
    assert dict(key) == {"brokerName": "b", "queueId": 0, "topic": "t"} and value == 42
    assert key == jsonlax.FrozenObject({"topic": "t", "queueId": 0, "brokerName": "b"})


def test_whitespace_escapes_and_nesting() -> None:
    raw = ' { 7 : [ {"k" : "\\u00fc\\n"} ] , "x" : -1.5e3 } '
    assert jsonlax.loads(raw) == {7: [{"k": "\u00fc\n"}], "x": -1500.0}


@pytest.mark.parametrize(
    "raw",
    ["{0:}", "{0 1}", "[1,", '{"a":1,}', "{0:1} x", "tru", '"unterminated', "{" * 200, b"\xff"],
)
def test_malformed_documents(raw: str | bytes) -> None:
    with pytest.raises(ProtocolError):
        jsonlax.loads(raw)


@given(st.text(max_size=200))
def test_arbitrary_text_raises_only_protocol_error(text: str) -> None:
    with contextlib.suppress(ProtocolError):
        jsonlax.loads(text)


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=20,
)


@given(_json)
def test_dumps_of_standard_values_is_standard_json(value: Any) -> None:
    assert json.loads(jsonlax.dumps(value)) == value


def test_dumps_object_keys_round_trip() -> None:
    key = jsonlax.FrozenObject({"brokerName": "b", "queueId": 1, "topic": "t"})
    data = jsonlax.dumps({"messageQueueTable": {key: 9}})
    assert data == b'{"messageQueueTable":{{"brokerName":"b","queueId":1,"topic":"t"}:9}}'
    assert jsonlax.loads(data) == {"messageQueueTable": {key: 9}}
