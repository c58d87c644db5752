"""``--format``: kcat's ``-f`` directives, and a mistake in one refused before connecting."""

from __future__ import annotations

import pytest

from rocketmq_actors.cli.common import UsageError
from rocketmq_actors.cli.formatting import check_format, render
from rocketmq_actors.protocol.records import MessageExt, decode_messages
from rocketmq_actors.testing.stored import encode_stored


def _message() -> MessageExt:
    stored = encode_stored(
        topic="orders", body="héllo".encode(), queue_id=3, queue_offset=42,
        properties={"KEYS": "k1 k2", "TAGS": "TagA", "color": "red"},
        store_timestamp=1_700_000_000_123,
    )  # fmt: skip
    (message,) = decode_messages(stored)
    message.broker_name = "broker-a"
    return message


def test_every_directive_and_escape() -> None:
    fmt = "%t %b %p %o [%k] %s %S %T %g %%\\t%h\\n\\\\"
    check_format(fmt)
    assert render(fmt, _message()) == (
        "orders broker-a 3 42 [k1 k2] héllo 6 1700000000123 TagA %\t"
        "KEYS=k1 k2,TAGS=TagA,color=red\n\\"
    )


@pytest.mark.parametrize("fmt", ["%z", "body %", "line\\q", "tail\\"])
def test_an_unknown_directive_is_a_usage_error(fmt: str) -> None:
    with pytest.raises(UsageError, match="--format"):
        check_format(fmt)
