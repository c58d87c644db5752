"""ACL 2.0 administration refuses bad input before any I/O (``rocketmq_actors.authadmin``;
the real broker's answers are in tests/security/test_acl_admin_real.py)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from rocketmq_actors import admin
from rocketmq_actors.authadmin import acl_info, user_info
from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.errors import ConfigError


def test_names_are_sent_as_java_spells_them() -> None:
    user = user_info("alice", "pw", user_type="super", user_status="DISABLE")
    assert (user.user_type, user.user_status) == ("Super", "disable")
    acl = acl_info("user:alice", ["topic:orders", "*", "Group:g-*"], ["pub", "SUB"],
                   decision="deny", source_ips=["10.0.0.0/8", "::1"])  # fmt: skip
    assert acl.subject == "User:alice"
    entries = acl.policies[0].entries
    assert [e.resource for e in entries] == ["Topic:orders", "*", "Group:g-*"]
    assert {(e.actions, e.decision, e.source_ips) for e in entries} == {
        (("Pub", "Sub"), "Deny", ("10.0.0.0/8", "::1"))}  # fmt: skip


@pytest.mark.parametrize(
    "kwargs",
    [
        {"subject": "alice"}, {"subject": "Group:g"}, {"subject": "User:"},
        {"resources": ["orders"]}, {"resources": ["Queue:q"]}, {"resources": ["Topic:"]},
        {"resources": []}, {"resources": "Topic:t"}, {"actions": ["Any"]},
        {"actions": ["Publish"]}, {"actions": []}, {"decision": "maybe"}, {"decision": None},
        {"source_ips": ["10.0.0.300"]}, {"source_ips": ["host.example"]},
    ],
)  # fmt: skip
def test_a_bad_acl_is_refused(kwargs: dict[str, Any]) -> None:
    args: dict[str, Any] = {"subject": "User:a", "resources": ["Topic:t"], "actions": ["Pub"],
                            **kwargs}  # fmt: skip
    with pytest.raises(ConfigError):
        acl_info(args.pop("subject"), args.pop("resources"), args.pop("actions"), **args)


@pytest.mark.parametrize(
    "kwargs",
    [{"username": ""}, {"username": " a"}, {"password": "  "}, {"user_type": "Admin"},
     {"user_status": "on"}],
)  # fmt: skip
def test_a_bad_user_is_refused(kwargs: dict[str, Any]) -> None:
    args: dict[str, Any] = {"username": "a", "password": "p", **kwargs}
    with pytest.raises(ConfigError):
        user_info(args.pop("username"), args.pop("password"), **args)


Call = Callable[[ClientInstance], Awaitable[object]]


@pytest.mark.parametrize(
    "call",
    [
        lambda i: admin.create_user(i, "", "pw"),
        lambda i: admin.create_user(i, "a", ""),
        lambda i: admin.update_user(i, "a"),  # nothing to update
        lambda i: admin.update_user(i, "a", user_status="gone"),
        lambda i: admin.delete_user(i, ""),
        lambda i: admin.get_user(i, "a", cluster="C", addr="h:1"),
        lambda i: admin.list_users(i, addr="no-port"),
        lambda i: admin.create_acl(i, "User:a", ["Topic:t"], ["Pub"], decision="Maybe"),
        lambda i: admin.update_acl(i, "a", ["Topic:t"], ["Pub"]),
        lambda i: admin.delete_acl(i, "User:a", "nothing"),
        lambda i: admin.delete_acl(i, "User:a", policy_type="Other"),
        lambda i: admin.get_acl(i, "alice"),
        lambda i: admin.controller_metadata(i, "no-port"),
        lambda i: admin.sync_state_data(i, "h:1", []),
        lambda i: admin.elect_master(i, "h:1", "C", "broker-a", -1),
        lambda i: admin.elect_master(i, "h:1", "", "broker-a", 0),
    ],
)
async def test_bad_arguments_fail_before_any_io(call: Call) -> None:
    """The instance is never started: a call that reached the network would fail with
    ClientNotStarted, not ConfigError."""
    with pytest.raises(ConfigError):
        await call(ClientInstance("127.0.0.1:1"))
