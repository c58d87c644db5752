"""Namespaces as Java's NamespaceUtil wraps and strips them."""

from __future__ import annotations

import pytest

from rocketmq_actors.names import unwrap, wrap

CASES = [  # (as the application names it, on the wire with namespace "ns")
    ("orders", "ns%orders"),
    ("%RETRY%g", "%RETRY%ns%g"),
    ("%DLQ%g", "%DLQ%ns%g"),
    ("RMQ_SYS_TRACE_TOPIC", "RMQ_SYS_TRACE_TOPIC"),  # system topics are nobody's
    ("TBW102", "TBW102"),
    ("rmq_sys_SYNC_BROKER_MEMBER_x", "rmq_sys_SYNC_BROKER_MEMBER_x"),
    ("CID_RMQ_SYS_X", "CID_RMQ_SYS_X"),  # system consumer groups too
]


@pytest.mark.parametrize(("app", "wire"), CASES)
def test_wrap_and_unwrap(app: str, wire: str) -> None:
    assert wrap("ns", app) == wire
    assert wrap("ns", wire) == wire  # already wrapped: as it is
    assert unwrap("ns", wire) == app


def test_without_a_namespace_or_in_another_one_names_stay() -> None:
    assert wrap(None, "orders") == wrap("", "orders") == "orders"
    assert unwrap(None, "ns%orders") == "ns%orders"
    assert unwrap("other", "ns%orders") == "ns%orders"
