"""ACL 2.0 users and ACLs of RocketMQ 5.3+ brokers started with authentication (and
authorization) enabled, as ``mqadmin`` manages them (re-exported by
:mod:`rocketmq_actors.admin`):

* :func:`create_user` / :func:`update_user` / :func:`delete_user` - AUTH_CREATE_USER (3001),
  AUTH_UPDATE_USER (3002), AUTH_DELETE_USER (3003) (``createUser``, ``updateUser``,
  ``deleteUser``);
* :func:`get_user` / :func:`list_users` - AUTH_GET_USER (3004), AUTH_LIST_USER (3005)
  (``getUser``, ``listUser``);
* :func:`create_acl` / :func:`update_acl` / :func:`delete_acl` - AUTH_CREATE_ACL (3006),
  AUTH_UPDATE_ACL (3007), AUTH_DELETE_ACL (3008) (``createAcl``, ``updateAcl``, ``deleteAcl``);
* :func:`get_acl` / :func:`list_acls` - AUTH_GET_ACL (3009), AUTH_LIST_ACL (3010)
  (``getAcl``, ``listAcl``).

Each broker node keeps users and ACLs of its own, so a change goes to every node of the
cluster, slaves included (what ``mqadmin createUser -c`` does), or to the one ``addr``
given; a query asks the masters (or ``addr``). The instance must sign its requests with a
super user's credentials (``ClientInstance(credentials=...)``; the broker's
``initAuthenticationUser`` is one): a normal user may not manage users, and only a super
user may create or change a super user. Arguments are checked before any I/O
(:class:`~rocketmq_actors.errors.ConfigError`); a broker's refusal is :class:`AuthRefused`,
a refused identity :class:`~rocketmq_actors.errors.AccessDenied`.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Sequence
from typing import TypeVar

from rocketmq_actors.adminbase import call, check_addr, masters, nodes, on_each
from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.errors import BrokerError, ConfigError
from rocketmq_actors.protocol.auth_bodies import (
    ACTIONS,
    DECISIONS,
    POLICY_TYPES,
    RESOURCE_TYPES,
    USER_STATUSES,
    USER_TYPES,
    AclInfo,
    AclRequestHeader,
    DeleteAclRequestHeader,
    ListAclsRequestHeader,
    ListUsersRequestHeader,
    UserInfo,
    UserRequestHeader,
    decode_acl_list,
    decode_user_list,
)
from rocketmq_actors.protocol.codes import RequestCode
from rocketmq_actors.protocol.command import RemotingCommand

__all__ = [
    "AuthRefused",
    "acl_info",
    "create_acl",
    "create_user",
    "delete_acl",
    "delete_user",
    "get_acl",
    "get_user",
    "list_acls",
    "list_users",
    "update_acl",
    "update_user",
    "user_info",
]


class AuthRefused(BrokerError):
    """A broker refused a user or ACL request (``code`` and ``remark`` are its answer): the
    user exists already, or does not; the ACL's subject is no user; a super user changed
    by a normal one; a broker without ACL 2.0 (authentication) or older than 5.3. Trying
    again cannot help."""

    def __init__(self, addr: str, code: int, remark: str | None) -> None:
        super().__init__(addr, code, remark)
        self.retriable = False


# ---- arguments (checked before any I/O) ----------------------------------------------------


def _name(kind: str, value: object) -> str:
    """A user name or password: text, not blank (the broker's "can not be blank")."""
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{kind} must be a non-empty string, not {value!r}")
    if kind == "username" and value != value.strip():
        raise ConfigError(f"username {value!r} begins or ends with a blank")
    return value


def _named(kind: str, value: object, names: Sequence[str]) -> str:
    """Java's ``getByName``: a name of ``names`` in any case, sent as Java spells it."""
    for name in names:
        if isinstance(value, str) and value.lower() == name.lower():
            return name
    raise ConfigError(f"{kind} must be one of {', '.join(names)}, not {value!r}")


def _choice(kind: str, value: str | None, names: Sequence[str]) -> str | None:
    """:func:`_named`, or None for None (the broker's default, or what is kept)."""
    return None if value is None else _named(kind, value, names)


def _subject(subject: object) -> str:
    """``User:name`` (ACL 2.0's only subject type)."""
    kind, sep, name = subject.partition(":") if isinstance(subject, str) else ("", "", "")
    if not sep or kind.lower() != "user" or not name.strip():
        raise ConfigError(f"an ACL subject is User:<username>, not {subject!r}")
    return f"User:{_name('username', name)}"


def _resource(resource: object) -> str:
    """``*``, or ``Type:name`` with a type of RESOURCE_TYPES (``Topic:t``, ``Group:g``,
    ``Topic:t-*`` a prefix, ``Topic:*`` every topic)."""
    if resource == "*":
        return "*"
    kind, sep, name = resource.partition(":") if isinstance(resource, str) else ("", "", "")
    canonical = _choice("a resource type", kind, RESOURCE_TYPES) if sep else None
    if canonical is None or not name.strip() or name != name.strip():
        raise ConfigError(
            f"a resource is * or Type:name ({', '.join(RESOURCE_TYPES)}), not {resource!r}"
        )
    return f"{canonical}:{name}"


def _strings(kind: str, values: object) -> list[str]:
    if isinstance(values, str) or not isinstance(values, Sequence) or not values:
        raise ConfigError(f"{kind} must be a non-empty list of strings, not {values!r}")
    return list(values)


def _source_ip(value: object) -> str:
    try:
        ipaddress.ip_network(str(value), strict=False)
    except ValueError:
        raise ConfigError(f"a source IP is an IP address or a CIDR block, not {value!r}") from None
    return str(value)


def user_info(
    username: str, password: str | None = None, *, user_type: str | None = None,
    user_status: str | None = None,
) -> UserInfo:  # fmt: skip
    """The :class:`UserInfo` :func:`create_user` / :func:`update_user` send, its names
    spelled as Java does; :class:`~rocketmq_actors.errors.ConfigError` for a blank name or
    password, or a type or status the broker does not know (no I/O)."""
    return UserInfo(
        username=_name("username", username),
        password=None if password is None else _name("password", password),
        user_type=_choice("user_type", user_type, USER_TYPES),
        user_status=_choice("user_status", user_status, USER_STATUSES),
    )


def acl_info(
    subject: str, resources: Sequence[str], actions: Sequence[str], *, decision: str = "Allow",
    source_ips: Sequence[str] = (),
) -> AclInfo:  # fmt: skip
    """The :class:`AclInfo` :func:`create_acl` / :func:`update_acl` send (one policy, an
    entry per resource), its names spelled as Java does;
    :class:`~rocketmq_actors.errors.ConfigError` for a subject, resource, action, decision
    or source IP the broker would refuse or ignore (no I/O)."""
    return AclInfo.of(
        _subject(subject), [_resource(r) for r in _strings("resources", resources)],
        [_named("an action", a, ACTIONS) for a in _strings("actions", actions)],
        _named("decision", decision, DECISIONS), [_source_ip(ip) for ip in source_ips],
    )  # fmt: skip


# ---- where requests go ---------------------------------------------------------------------


async def _masters(instance: ClientInstance, cluster: str | None, addr: str | None) -> list[str]:
    if addr is not None:
        return [addr]
    return list((await masters(instance, cluster)).values())


def _check_target(cluster: str | None, addr: str | None) -> None:
    if cluster is not None and addr is not None:
        raise ConfigError("give a cluster or a broker address, not both")
    if addr is not None:
        check_addr("broker address", addr)


T = TypeVar("T")


async def _ask(
    instance: ClientInstance, addr: str, code: int, ext: dict[str, str], body: bytes = b""
) -> RemotingCommand:
    return await call(instance, addr, code, ext, body=body, refused=AuthRefused)


async def _on_nodes(
    instance: ClientInstance, code: int, ext: dict[str, str], body: bytes = b"", *,
    cluster: str | None, addr: str | None,
) -> list[str]:  # fmt: skip
    """The change asked of ``addr``, or of every node of ``cluster``; the addresses."""
    targets = [addr] if addr is not None else await nodes(instance, cluster)
    return await on_each(instance, {t: t for t in targets}, code, ext, body=body,
                         refused=AuthRefused)  # fmt: skip


# ---- users ---------------------------------------------------------------------------------


async def create_user(
    instance: ClientInstance, username: str, password: str, *, user_type: str = "Normal",
    cluster: str | None = None, addr: str | None = None,
) -> list[str]:  # fmt: skip
    """Create user ``username`` (``user_type`` ``Normal`` or ``Super``; enabled) on every
    node of ``cluster`` (every cluster when None) or on the broker at ``addr``; the
    addresses it was created on. An existing user is :class:`AuthRefused`."""
    _check_target(cluster, addr)
    user = user_info(username, _name("password", password), user_type=user_type)
    header = UserRequestHeader(username=username).to_ext()
    return await _on_nodes(instance, RequestCode.AUTH_CREATE_USER, header, user.encode(),
                           cluster=cluster, addr=addr)  # fmt: skip


async def update_user(
    instance: ClientInstance, username: str, *, password: str | None = None,
    user_type: str | None = None, user_status: str | None = None, cluster: str | None = None,
    addr: str | None = None,
) -> list[str]:  # fmt: skip
    """Change user ``username``'s password, type (``Normal``, ``Super``) or status
    (``enable``, ``disable``: a disabled user's requests are refused) - each one given,
    the others kept - on every node of ``cluster`` or at ``addr``; the addresses changed.
    A user a broker does not have is :class:`AuthRefused`."""
    _check_target(cluster, addr)
    if password is None and user_type is None and user_status is None:
        raise ConfigError("nothing to update: give a password, a user type or a user status")
    user = user_info(username, password, user_type=user_type, user_status=user_status)
    header = UserRequestHeader(username=username).to_ext()
    return await _on_nodes(instance, RequestCode.AUTH_UPDATE_USER, header, user.encode(),
                           cluster=cluster, addr=addr)  # fmt: skip


async def delete_user(
    instance: ClientInstance, username: str, *, cluster: str | None = None,
    addr: str | None = None,
) -> list[str]:  # fmt: skip
    """Delete user ``username`` and its ACL from every node of ``cluster`` or at ``addr``
    (a broker without the user does nothing); the addresses asked."""
    _check_target(cluster, addr)
    header = UserRequestHeader(username=_name("username", username)).to_ext()
    return await _on_nodes(instance, RequestCode.AUTH_DELETE_USER, header, cluster=cluster,
                           addr=addr)  # fmt: skip


async def _first(
    instance: ClientInstance, cluster: str | None, addr: str | None, code: int, *,
    header: dict[str, str], decode: Callable[[bytes], T | None],
) -> T | None:  # fmt: skip
    """The first answer of the masters of ``cluster`` (or of ``addr``) that has one."""
    for target in await _masters(instance, cluster, addr):
        found = decode((await _ask(instance, target, code, header)).body)
        if found is not None:
            return found
    return None


async def _merged(
    instance: ClientInstance, cluster: str | None, addr: str | None, code: int, *,
    header: dict[str, str], decode: Callable[[bytes], Sequence[T]], key: Callable[[T], str],
) -> tuple[T, ...]:  # fmt: skip
    """The lists of the masters of ``cluster`` (or of ``addr``) as one, by ``key`` (what two
    masters have is listed once)."""
    found: dict[str, T] = {}
    for target in await _masters(instance, cluster, addr):
        for item in decode((await _ask(instance, target, code, header)).body):
            found.setdefault(key(item), item)
    return tuple(found[name] for name in sorted(found))


async def get_user(
    instance: ClientInstance, username: str, *, cluster: str | None = None,
    addr: str | None = None,
) -> UserInfo | None:  # fmt: skip
    """User ``username`` as the first master of ``cluster`` that has it (or the broker at
    ``addr``) keeps it, password included; None when none has it."""
    _check_target(cluster, addr)
    header = UserRequestHeader(username=_name("username", username)).to_ext()
    return await _first(instance, cluster, addr, RequestCode.AUTH_GET_USER, header=header,
                        decode=UserInfo.decode)  # fmt: skip


async def list_users(
    instance: ClientInstance, filter: str | None = None, *, cluster: str | None = None,
    addr: str | None = None,
) -> tuple[UserInfo, ...]:  # fmt: skip
    """Every user (whose name contains ``filter``) of the masters of ``cluster`` (or of the
    broker at ``addr``), by name; a user two masters have is listed once."""
    _check_target(cluster, addr)
    header = ListUsersRequestHeader(filter=filter or None).to_ext()
    return await _merged(instance, cluster, addr, RequestCode.AUTH_LIST_USER, header=header,
                         decode=decode_user_list, key=lambda user: user.username)  # fmt: skip


# ---- ACLs ----------------------------------------------------------------------------------


async def create_acl(
    instance: ClientInstance, subject: str, resources: Sequence[str], actions: Sequence[str],
    *, decision: str = "Allow", source_ips: Sequence[str] = (), cluster: str | None = None,
    addr: str | None = None,
) -> list[str]:  # fmt: skip
    """Give ``subject`` (``User:name``, an existing user) a policy entry per resource
    (``Topic:orders``, ``Group:billing``, ``Topic:order-*``, ``*``) with ``actions``
    (``Pub``, ``Sub``, ``Create``, ``Update``, ``Delete``, ``Get``, ``List``, ``All``),
    ``decision`` (``Allow`` or ``Deny``), limited to ``source_ips`` (IPs or CIDR blocks;
    empty: any), on every node of ``cluster`` or at ``addr`` (``mqadmin createAcl``). An
    entry for a resource the ACL has already is replaced, the others are kept. The
    addresses changed."""
    return await _put_acl(instance, RequestCode.AUTH_CREATE_ACL, subject, resources, actions,
                          decision=decision, source_ips=source_ips, cluster=cluster,
                          addr=addr)  # fmt: skip


async def update_acl(
    instance: ClientInstance, subject: str, resources: Sequence[str], actions: Sequence[str],
    *, decision: str = "Allow", source_ips: Sequence[str] = (), cluster: str | None = None,
    addr: str | None = None,
) -> list[str]:  # fmt: skip
    """Set ``subject``'s entries of ``resources`` as :func:`create_acl` does (``mqadmin
    updateAcl``: the broker treats both alike, creating the ACL when it has none)."""
    return await _put_acl(instance, RequestCode.AUTH_UPDATE_ACL, subject, resources, actions,
                          decision=decision, source_ips=source_ips, cluster=cluster,
                          addr=addr)  # fmt: skip


async def _put_acl(
    instance: ClientInstance, code: int, subject: str, resources: Sequence[str],
    actions: Sequence[str], *, decision: str, source_ips: Sequence[str], cluster: str | None,
    addr: str | None,
) -> list[str]:  # fmt: skip
    _check_target(cluster, addr)
    acl = acl_info(subject, resources, actions, decision=decision, source_ips=source_ips)
    header = AclRequestHeader(subject=acl.subject).to_ext()
    return await _on_nodes(instance, code, header, acl.encode(), cluster=cluster, addr=addr)


async def delete_acl(
    instance: ClientInstance, subject: str, resource: str | None = None, *,
    policy_type: str | None = None, cluster: str | None = None, addr: str | None = None,
) -> list[str]:  # fmt: skip
    """Delete ``subject``'s whole ACL, or (``resource``) its entries of that resource in
    its policies of ``policy_type`` (``Custom``, the default, or ``Default``), from every
    node of ``cluster`` or at ``addr``; the addresses changed. A subject without an ACL is
    :class:`AuthRefused`."""
    _check_target(cluster, addr)
    header = DeleteAclRequestHeader(
        subject=_subject(subject), resource=None if resource is None else _resource(resource),
        policy_type=_choice("policy_type", policy_type, POLICY_TYPES),
    ).to_ext()  # fmt: skip
    return await _on_nodes(instance, RequestCode.AUTH_DELETE_ACL, header, cluster=cluster,
                           addr=addr)  # fmt: skip


async def get_acl(
    instance: ClientInstance, subject: str, *, cluster: str | None = None,
    addr: str | None = None,
) -> AclInfo | None:  # fmt: skip
    """``subject``'s ACL as the first master of ``cluster`` that has one (or the broker at
    ``addr``) keeps it; None when none has one. A subject that is no user is
    :class:`AuthRefused`."""
    _check_target(cluster, addr)
    header = AclRequestHeader(subject=_subject(subject)).to_ext()
    return await _first(instance, cluster, addr, RequestCode.AUTH_GET_ACL, header=header,
                        decode=AclInfo.decode)  # fmt: skip


async def list_acls(
    instance: ClientInstance, subject_filter: str | None = None,
    resource_filter: str | None = None, *, cluster: str | None = None, addr: str | None = None,
) -> tuple[AclInfo, ...]:  # fmt: skip
    """Every ACL of the masters of ``cluster`` (or of the broker at ``addr``), by subject
    (one two masters have is listed once): only those whose subject contains
    ``subject_filter``, with only the entries whose resource contains ``resource_filter``."""
    _check_target(cluster, addr)
    header = ListAclsRequestHeader(subject_filter=subject_filter or None,
                                   resource_filter=resource_filter or None).to_ext()  # fmt: skip
    return await _merged(instance, cluster, addr, RequestCode.AUTH_LIST_ACL, header=header,
                         decode=decode_acl_list, key=lambda acl: acl.subject)  # fmt: skip
