"""Administration that changes every master (or node) in turn: a broker that refuses partway
says which brokers took the change before it (``adminbase.on_each``, under
``rocketmq_actors.brokeradmin`` and ``authadmin``; the real brokers' answers are in
tests/test_brokeradmin_real.py and tests/security)."""

from __future__ import annotations

from typing import Any

import pytest

from rocketmq_actors import adminbase, authadmin, brokeradmin
from rocketmq_actors.errors import BrokerError
from rocketmq_actors.protocol.codes import ResponseCode

MASTERS = {"broker-a": "10.0.0.1:10911", "broker-b": "10.0.0.2:10911", "broker-c": "10.0.0.3:10911"}


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The three masters; broker-b refuses every request."""
    calls: list[str] = []

    async def masters(instance: Any, cluster: str | None) -> dict[str, str]:
        return dict(MASTERS)

    async def topic_masters(instance: Any, topic: str) -> dict[str, str]:
        return dict(MASTERS)

    async def call(instance: Any, addr: str, code: int, *args: Any, **kwargs: Any) -> None:
        calls.append(addr)
        if addr == MASTERS["broker-b"]:
            refused = kwargs.get("refused") or BrokerError  # (a module's own, as call does)
            raise refused(addr, ResponseCode.SYSTEM_ERROR, "refused")

    monkeypatch.setattr(brokeradmin, "masters", masters)
    monkeypatch.setattr(brokeradmin, "topic_masters", topic_masters)
    monkeypatch.setattr(adminbase, "call", call)
    return calls


async def test_a_request_mode_refused_partway_names_the_brokers_that_took_it(
    asked: list[str],
) -> None:
    with pytest.raises(BrokerError, match="refused") as info:
        await brokeradmin.set_message_request_mode(None, "G", "T", "POP")  # type: ignore[arg-type]
    assert info.value.__notes__ == [
        "applied on broker-a before broker-b failed; not on broker-b nor the ones after it"
    ]
    assert asked == [MASTERS["broker-a"], MASTERS["broker-b"]]  # (none after the refusal)


async def test_a_clone_refused_partway_names_the_brokers_that_took_it(asked: list[str]) -> None:
    with pytest.raises(BrokerError) as info:
        await brokeradmin.clone_group_offset(None, "G1", "G2", "T")  # type: ignore[arg-type]
    assert "applied on broker-a before broker-b failed" in info.value.__notes__[0]


async def test_a_refusal_by_the_first_broker_has_no_note(
    asked: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    reordered = {"broker-b": MASTERS["broker-b"], "broker-a": MASTERS["broker-a"]}

    async def masters(instance: Any, cluster: str | None) -> dict[str, str]:
        return reordered

    monkeypatch.setattr(brokeradmin, "masters", masters)
    with pytest.raises(BrokerError) as info:
        await brokeradmin.delete_group(None, "G")  # type: ignore[arg-type]
    assert not getattr(info.value, "__notes__", [])  # nothing was changed anywhere


async def test_an_acl_change_refused_partway_names_the_nodes_that_took_it(
    asked: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    async def nodes(instance: Any, cluster: str | None) -> list[str]:
        return sorted(MASTERS.values())

    monkeypatch.setattr(authadmin, "nodes", nodes)
    with pytest.raises(authadmin.AuthRefused) as info:  # (the ACL admin's own refusal)
        await authadmin.delete_user(None, "alice")  # type: ignore[arg-type]
    assert info.value.__notes__ == [
        f"applied on {MASTERS['broker-a']} before {MASTERS['broker-b']} failed; "
        f"not on {MASTERS['broker-b']} nor the ones after it"
    ]
