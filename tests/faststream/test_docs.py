"""docs/operations.md's RocketMQBroker table lists every constructor option with its default."""

from __future__ import annotations

import inspect

from faststream._internal.constants import EMPTY

from rocketmq_actors.faststream import RocketMQBroker
from tests.test_docs import _matches, _table


def test_the_broker_table_lists_every_option_with_its_default() -> None:
    params = {
        name: p.default
        for name, p in inspect.signature(RocketMQBroker).parameters.items()
        if p.kind is not p.VAR_KEYWORD
    }
    table = _table("RocketMQBroker")
    assert set(table) == set(params), "docs/operations.md and the signature differ"
    wrong = {
        n: (table[n], params[n])
        for n in params
        if not (table[n] == "unset" if params[n] is EMPTY else _matches(table[n], params[n]))
    }
    assert not wrong
