"""ACL 2.0 administration (RocketMQ 5.3+, ``AUTH_*`` requests 3001-3010): the headers and the
JSON bodies Java's ``MQClientAPIImpl`` sends and reads - ``UserInfo`` (a user: name, password,
type, status) and ``AclInfo`` (a subject's policies, each a list of entries: resource,
actions, source IPs, decision). Names on the wire are Java's enum names (``Normal``,
``enable``, ``Pub``, ``Allow``, ``Custom``); the broker matches them ignoring case."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import attrs

from . import jsonlax
from .bodies import _body_decoder, _field
from .errors import ProtocolError
from .headers import Header, wire

T = TypeVar("T")

__all__ = [
    "ACTIONS",
    "DECISIONS",
    "POLICY_TYPES",
    "RESOURCE_TYPES",
    "USER_STATUSES",
    "USER_TYPES",
    "AclInfo",
    "AclRequestHeader",
    "DeleteAclRequestHeader",
    "ListAclsRequestHeader",
    "ListUsersRequestHeader",
    "PolicyEntryInfo",
    "PolicyInfo",
    "UserInfo",
    "UserRequestHeader",
    "decode_acl_list",
    "decode_user_list",
]

#: Java's ``UserType`` names
USER_TYPES = ("Super", "Normal")
#: Java's ``UserStatus`` names
USER_STATUSES = ("enable", "disable")
#: Java's ``Action`` names a policy entry may hold (``Any`` is refused by the broker)
ACTIONS = ("All", "Pub", "Sub", "Create", "Update", "Delete", "Get", "List")
#: Java's ``Decision`` names
DECISIONS = ("Allow", "Deny")
#: Java's ``PolicyType`` names
POLICY_TYPES = ("Custom", "Default")
#: Java's ``ResourceType`` names a resource ``Type:name`` may start with (``*`` is any)
RESOURCE_TYPES = ("Any", "Cluster", "Namespace", "Topic", "Group")


# ---- headers --------------------------------------------------------------------------------


@attrs.define(kw_only=True, slots=True)
class UserRequestHeader(Header):
    """AUTH_CREATE_USER (3001), AUTH_UPDATE_USER (3002), AUTH_DELETE_USER (3003) and
    AUTH_GET_USER (3004): Java's ``CreateUserRequestHeader`` and its three twins."""

    username: str = wire("username")


@attrs.define(kw_only=True, slots=True)
class ListUsersRequestHeader(Header):
    """AUTH_LIST_USER (3005): ``filter``, a part of the names to list (None: every user)."""

    filter: str | None = wire("filter", default=None)


@attrs.define(kw_only=True, slots=True)
class AclRequestHeader(Header):
    """AUTH_CREATE_ACL (3006), AUTH_UPDATE_ACL (3007) and AUTH_GET_ACL (3009): Java's
    ``CreateAclRequestHeader`` and its twins; ``subject`` as ``User:name``."""

    subject: str = wire("subject")


@attrs.define(kw_only=True, slots=True)
class DeleteAclRequestHeader(Header):
    """AUTH_DELETE_ACL (3008): the subject's whole ACL, or (``resource``) its entries of one
    resource in policies of ``policy_type`` (the broker's default: ``Custom``)."""

    subject: str = wire("subject")
    policy_type: str | None = wire("policyType", default=None)
    resource: str | None = wire("resource", default=None)


@attrs.define(kw_only=True, slots=True)
class ListAclsRequestHeader(Header):
    """AUTH_LIST_ACL (3010): parts of the subjects and resources to list (None: all)."""

    subject_filter: str | None = wire("subjectFilter", default=None)
    resource_filter: str | None = wire("resourceFilter", default=None)


# ---- bodies ---------------------------------------------------------------------------------


def _opt_str(obj: Mapping[str, Any], key: str) -> str | None:
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ProtocolError("bad-body", f"{key!r} should be a string, got {value!r}")
    return value


def _strings(obj: Mapping[str, Any], key: str) -> tuple[str, ...]:
    values = _field(obj, key, list, [])
    if not all(isinstance(v, str) for v in values):
        raise ProtocolError("bad-body", f"{key!r} should be a list of strings, got {values!r}")
    return tuple(values)


def _mapping(value: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ProtocolError("bad-body", f"{what} is not an object")
    return value


def _json(obj: Mapping[str, Any]) -> bytes:
    """fastjson's way: fields that are None are left out."""
    return json.dumps({k: v for k, v in obj.items() if v is not None}).encode()


@attrs.frozen(kw_only=True)
class UserInfo:
    """An ACL 2.0 user: Java's ``UserInfo``. ``user_type`` is ``Super`` or ``Normal``,
    ``user_status`` ``enable`` or ``disable``; a None field is not sent (on update: left as
    the broker has it). The password is left out of ``repr``."""

    username: str
    password: str | None = attrs.field(default=None, repr=False)
    user_type: str | None = None
    user_status: str | None = None

    def encode(self) -> bytes:
        """The body of AUTH_CREATE_USER / AUTH_UPDATE_USER."""
        return _json({"username": self.username, "password": self.password,
                      "userType": self.user_type, "userStatus": self.user_status})  # fmt: skip

    @classmethod
    def from_json(cls, obj: Any) -> UserInfo:
        obj = _mapping(obj, "a user")
        return cls(
            username=_field(obj, "username", str, ""),
            password=_opt_str(obj, "password"),
            user_type=_opt_str(obj, "userType"),
            user_status=_opt_str(obj, "userStatus"),
        )

    @classmethod
    @_body_decoder
    def decode(cls, body: bytes) -> UserInfo | None:
        """AUTH_GET_USER (3004) reply: the user, or None (an empty body: no such user)."""
        return _one(body, cls.from_json)


@_body_decoder
def decode_user_list(body: bytes) -> tuple[UserInfo, ...]:
    """AUTH_LIST_USER (3005) reply: a JSON list of ``UserInfo`` (an empty body: no user)."""
    return _list(body, UserInfo.from_json, "the user list")


@attrs.frozen(kw_only=True)
class PolicyEntryInfo:
    """One entry of a policy: Java's ``AclInfo.PolicyEntryInfo``. ``resource`` is ``*`` or
    ``Type:name`` (``Topic:orders``, ``Group:billing``, ``Topic:order-*`` a prefix,
    ``Topic:*`` every topic); ``actions`` are names of :data:`ACTIONS`; ``source_ips`` IPs or
    CIDR blocks the entry is limited to (empty: any); ``decision`` ``Allow`` or ``Deny``."""

    resource: str
    actions: tuple[str, ...]
    decision: str
    source_ips: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"resource": self.resource, "actions": list(self.actions),
                               "decision": self.decision}  # fmt: skip
        if self.source_ips:  # (none: no field, as fastjson leaves out Java's null list)
            out["sourceIps"] = list(self.source_ips)
        return out

    @classmethod
    def from_json(cls, obj: Any) -> PolicyEntryInfo:
        obj = _mapping(obj, "a policy entry")
        return cls(
            resource=_field(obj, "resource", str, ""),
            actions=_strings(obj, "actions"),
            decision=_field(obj, "decision", str, ""),
            source_ips=_strings(obj, "sourceIps"),
        )


@attrs.frozen(kw_only=True)
class PolicyInfo:
    """A policy of an ACL: Java's ``AclInfo.PolicyInfo``; ``policy_type`` ``Custom`` (what
    an administrator creates) or ``Default``; None lets the broker choose ``Custom``."""

    entries: tuple[PolicyEntryInfo, ...]
    policy_type: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"entries": [e.to_json() for e in self.entries]}
        if self.policy_type is not None:
            out["policyType"] = self.policy_type
        return out

    @classmethod
    def from_json(cls, obj: Any) -> PolicyInfo:
        obj = _mapping(obj, "a policy")
        return cls(
            entries=tuple(PolicyEntryInfo.from_json(e) for e in _field(obj, "entries", list, [])),
            policy_type=_opt_str(obj, "policyType"),
        )


@attrs.frozen(kw_only=True)
class AclInfo:
    """A subject's access control list: Java's ``AclInfo``. ``subject`` is ``User:name``."""

    subject: str
    policies: tuple[PolicyInfo, ...]

    @classmethod
    def of(
        cls, subject: str, resources: Sequence[str], actions: Sequence[str], decision: str,
        source_ips: Sequence[str] = (),
    ) -> AclInfo:  # fmt: skip
        """One policy with an entry per resource, each with the same actions, source IPs and
        decision (Java's ``AclInfo.of``, what ``mqadmin createAcl`` sends)."""
        entries = tuple(
            PolicyEntryInfo(
                resource=r, actions=tuple(actions), decision=decision, source_ips=tuple(source_ips)
            )
            for r in resources
        )
        return cls(subject=subject, policies=(PolicyInfo(entries=entries),))

    def encode(self) -> bytes:
        """The body of AUTH_CREATE_ACL / AUTH_UPDATE_ACL."""
        return _json({"subject": self.subject,
                      "policies": [p.to_json() for p in self.policies]})  # fmt: skip

    @classmethod
    def from_json(cls, obj: Any) -> AclInfo:
        obj = _mapping(obj, "an ACL")
        return cls(
            subject=_field(obj, "subject", str, ""),
            policies=tuple(PolicyInfo.from_json(p) for p in _field(obj, "policies", list, [])),
        )

    @classmethod
    @_body_decoder
    def decode(cls, body: bytes) -> AclInfo | None:
        """AUTH_GET_ACL (3009) reply: the subject's ACL, or None (an empty body: none)."""
        return _one(body, cls.from_json)


@_body_decoder
def decode_acl_list(body: bytes) -> tuple[AclInfo, ...]:
    """AUTH_LIST_ACL (3010) reply: a JSON list of ``AclInfo`` (an empty body: none)."""
    return _list(body, AclInfo.from_json, "the ACL list")


def _one(body: bytes, from_json: Callable[[Any], T]) -> T | None:
    """A GET reply: the one object, or None for an empty body."""
    return from_json(jsonlax.loads(body)) if body else None


def _list(body: bytes, from_json: Callable[[Any], T], what: str) -> tuple[T, ...]:
    """A LIST reply: a JSON list of objects (an empty body: none)."""
    if not body:
        return ()
    found = jsonlax.loads(body)
    if not isinstance(found, list):
        raise ProtocolError("bad-body", f"{what} is not a list")
    return tuple(from_json(item) for item in found)
