"""ACL 2.0 administration bodies and headers (AUTH_* 3001-3010) as Java's ``UserInfo`` /
``AclInfo`` and fastjson write them."""

from __future__ import annotations

import json

import pytest

from rocketmq_actors.protocol.auth_bodies import (
    AclInfo,
    AclRequestHeader,
    DeleteAclRequestHeader,
    ListAclsRequestHeader,
    ListUsersRequestHeader,
    PolicyEntryInfo,
    PolicyInfo,
    UserInfo,
    UserRequestHeader,
    decode_acl_list,
    decode_user_list,
)
from rocketmq_actors.protocol.errors import ProtocolError

# what a 5.3.3 broker answers AUTH_GET_USER and AUTH_GET_ACL with (fastjson: sorted fields)
USER = b'{"password":"pw","userStatus":"enable","userType":"Normal","username":"alice"}'
ACL = (
    b'{"policies":[{"entries":[{"actions":["Pub","Sub"],"decision":"Allow",'
    b'"resource":"Topic:orders","sourceIps":["10.0.0.0/8"]},{"actions":["Sub"],'
    b'"decision":"Deny","resource":"Group:billing"}],"policyType":"Custom"}],'
    b'"subject":"User:alice"}'
)


def test_a_user_is_read_and_its_password_kept_out_of_repr() -> None:
    user = UserInfo.decode(USER)
    assert user == UserInfo(username="alice", password="pw", user_type="Normal",
                            user_status="enable")  # fmt: skip
    assert "pw" not in repr(user) and "alice" in repr(user)


def test_a_user_update_sends_only_what_is_given() -> None:
    body = json.loads(UserInfo(username="alice", user_status="disable").encode())
    assert body == {"username": "alice", "userStatus": "disable"}
    full = json.loads(UserInfo(username="a", password="p", user_type="Super").encode())
    assert full == {"username": "a", "password": "p", "userType": "Super"}


def test_an_empty_body_is_no_user_no_acl_no_list() -> None:
    assert UserInfo.decode(b"") is None and AclInfo.decode(b"") is None
    assert decode_user_list(b"") == () and decode_acl_list(b"") == ()


def test_lists_of_users_and_acls() -> None:
    users = decode_user_list(b"[" + USER + b',{"username":"bob","userType":"Super"}]')
    assert [(u.username, u.user_type, u.user_status) for u in users] == [
        ("alice", "Normal", "enable"), ("bob", "Super", None)]  # fmt: skip
    (acl,) = decode_acl_list(b"[" + ACL + b"]")
    assert acl == AclInfo.decode(ACL)


def test_an_acl_is_read_entry_by_entry() -> None:
    acl = AclInfo.decode(ACL)
    assert acl is not None and acl.subject == "User:alice"
    (policy,) = acl.policies
    assert policy.policy_type == "Custom"
    assert policy.entries == (
        PolicyEntryInfo(resource="Topic:orders", actions=("Pub", "Sub"), decision="Allow",
                        source_ips=("10.0.0.0/8",)),
        PolicyEntryInfo(resource="Group:billing", actions=("Sub",), decision="Deny"),
    )  # fmt: skip


def test_an_acl_is_sent_as_mqadmin_create_acl_builds_it() -> None:
    """Java's ``AclInfo.of``: one policy (no type: the broker's Custom), an entry per
    resource; no source IPs is no ``sourceIps`` field."""
    acl = AclInfo.of("User:alice", ["Topic:a", "Topic:b"], ["Pub"], "Allow")
    assert json.loads(acl.encode()) == {
        "subject": "User:alice",
        "policies": [{"entries": [
            {"resource": "Topic:a", "actions": ["Pub"], "decision": "Allow"},
            {"resource": "Topic:b", "actions": ["Pub"], "decision": "Allow"},
        ]}],
    }  # fmt: skip
    typed = AclInfo(subject="User:a", policies=(PolicyInfo(entries=(), policy_type="Default"),))
    assert json.loads(typed.encode())["policies"] == [{"entries": [], "policyType": "Default"}]
    # what is sent reads back as itself
    ips = AclInfo.of("User:alice", ["Topic:a"], ["Pub"], "Deny", ["127.0.0.1"])
    assert AclInfo.decode(ips.encode()) == ips


@pytest.mark.parametrize(
    "body", [b"[1]", b'{"username": 5}', b'{"username":"a","password":7}', b"{"]
)
def test_a_malformed_user_is_a_protocol_error(body: bytes) -> None:
    with pytest.raises(ProtocolError):
        UserInfo.decode(body)


@pytest.mark.parametrize(
    "body",
    [b'{"subject":"User:a","policies":[{"entries":[{"actions":"Pub"}]}]}',
     b'{"subject":"User:a","policies":[{"entries":[{"actions":[1]}]}]}',
     b'{"subject":"User:a","policies":{}}', b'{"subject":"User:a","policies":[7]}'],
)  # fmt: skip
def test_a_malformed_acl_is_a_protocol_error(body: bytes) -> None:
    with pytest.raises(ProtocolError):
        AclInfo.decode(body)


def test_a_list_that_is_not_a_list_is_a_protocol_error() -> None:
    with pytest.raises(ProtocolError):
        decode_user_list(USER)
    with pytest.raises(ProtocolError):
        decode_acl_list(ACL)


def test_headers_carry_java_field_names_and_leave_out_none() -> None:
    assert UserRequestHeader(username="a").to_ext() == {"username": "a"}
    assert ListUsersRequestHeader().to_ext() == {}
    assert ListUsersRequestHeader(filter="al").to_ext() == {"filter": "al"}
    assert AclRequestHeader(subject="User:a").to_ext() == {"subject": "User:a"}
    assert DeleteAclRequestHeader(subject="User:a", resource="Topic:t").to_ext() == {
        "subject": "User:a", "resource": "Topic:t"}  # fmt: skip
    assert ListAclsRequestHeader(subject_filter="a", resource_filter="Topic").to_ext() == {
        "subjectFilter": "a", "resourceFilter": "Topic"}  # fmt: skip
