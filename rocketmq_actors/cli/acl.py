"""``rocketmq-actors acl user ...`` and ``acl policy ...``: ACL 2.0 users and ACLs of 5.3+
brokers (mqadmin createUser, updateUser, deleteUser, getUser, listUser, createAcl, updateAcl,
deleteAcl, getAcl, listAcl). Requests are signed with ``--access-key`` / ``--secret-key``
(a super user's); a change goes to every node of ``--cluster`` (every cluster by default)
or to the broker at ``--addr``, a query to the masters (or ``--addr``).

acl user create --username U --password P [--user-type Normal|Super]
acl user update --username U [--password P] [--user-type T] [--user-status enable|disable]
acl user delete --username U
acl user get --username U
acl user list [--filter TEXT]
acl policy create|update --subject User:U --resources R[,R...] --actions A[,A...]
                         [--decision Allow|Deny] [--source-ips IP[,CIDR...]]
acl policy delete --subject User:U [--resource R] [--policy-type Custom|Default]
acl policy get --subject User:U
acl policy list [--subject TEXT] [--resource TEXT]
"""

from __future__ import annotations

import argparse
from typing import Any

import attrs

from rocketmq_actors import admin
from rocketmq_actors.adminbase import check_addr
from rocketmq_actors.authadmin import acl_info, user_info
from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.protocol.auth_bodies import UserInfo

from .common import (
    NotFound,
    UsageError,
    add_common,
    add_credentials,
    emit,
    run_with_instance,
    table,
)

USER_ACTIONS = ("create", "update", "delete", "get", "list")
POLICY_ACTIONS = ("create", "update", "delete", "get", "list")


def _user_row(user: UserInfo) -> dict[str, Any]:
    """A user as printed: never its password."""
    return {"username": user.username, "user_type": user.user_type,
            "user_status": user.user_status}  # fmt: skip


def _target(args: argparse.Namespace) -> dict[str, Any]:
    return {"cluster": args.cluster, "addr": args.addr}


def _need(args: argparse.Namespace, *names: str) -> None:
    """Options an action requires (before any I/O)."""
    for name in names:
        if getattr(args, name) in (None, ""):
            raise UsageError(f"acl {args.kind} {args.action} needs --{name.replace('_', '-')}")


def _words(value: str | None) -> list[str]:
    """``a,b, c`` -> ``["a", "b", "c"]`` (as mqadmin splits its lists)."""
    return [w.strip() for w in (value or "").split(",") if w.strip()]


async def _user(instance: ClientInstance, args: argparse.Namespace) -> dict[str, Any]:
    where = _target(args)
    if args.action == "create":
        done = await admin.create_user(instance, args.username, args.password,
                                       user_type=args.user_type or "Normal", **where)  # fmt: skip
    elif args.action == "update":
        done = await admin.update_user(
            instance, args.username, password=args.password, user_type=args.user_type,
            user_status=args.user_status, **where,
        )  # fmt: skip
    elif args.action == "delete":
        done = await admin.delete_user(instance, args.username, **where)
    elif args.action == "get":
        user = await admin.get_user(instance, args.username, **where)
        if user is None:
            raise NotFound(f"no broker has user {args.username!r}")
        return {"user": _user_row(user)}
    else:
        users = await admin.list_users(instance, args.filter, **where)
        return {"users": [_user_row(u) for u in users]}
    return {"username": args.username, "action": args.action, "brokers": done}


async def _policy(instance: ClientInstance, args: argparse.Namespace) -> dict[str, Any]:
    where = _target(args)
    if args.action in ("create", "update"):
        change = admin.create_acl if args.action == "create" else admin.update_acl
        done = await change(
            instance, args.subject, _words(args.resources), _words(args.actions),
            decision=args.decision or "Allow", source_ips=_words(args.source_ips), **where,
        )  # fmt: skip
    elif args.action == "delete":
        done = await admin.delete_acl(instance, args.subject, args.resource,
                                      policy_type=args.policy_type, **where)  # fmt: skip
    elif args.action == "get":
        acl = await admin.get_acl(instance, args.subject, **where)
        if acl is None:
            raise NotFound(f"no broker has an ACL of {args.subject!r}")
        return {"acl": attrs.asdict(acl)}
    else:
        acls = await admin.list_acls(instance, args.subject, args.resource, **where)
        return {"acls": [attrs.asdict(a) for a in acls]}
    return {"subject": args.subject, "action": args.action, "brokers": done}


def _render(result: dict[str, Any]) -> str:
    if "user" in result or "users" in result:
        users = result.get("users", [result.get("user")])
        return table(users, ["username", "user_type", "user_status"])
    if "acl" in result or "acls" in result:
        acls = result.get("acls", [result.get("acl")])
        rows = [
            {"subject": a["subject"], "policy_type": p["policy_type"], "resource": e["resource"],
             "actions": ",".join(e["actions"]), "source_ips": ",".join(e["source_ips"]) or None,
             "decision": e["decision"]}
            for a in acls for p in a["policies"] for e in p["entries"]
        ]  # fmt: skip
        return table(rows, ["subject", "policy_type", "resource", "actions", "source_ips",
                            "decision"])  # fmt: skip
    what = result.get("username") or result.get("subject")
    return f"{result['action']} {what}: " + ", ".join(result["brokers"])


def _run(args: argparse.Namespace) -> int:
    if args.cluster and args.addr:
        raise UsageError("give --cluster or --addr, not both")
    if args.addr:
        check_addr("--addr", args.addr)
    if args.kind == "user":
        if args.action != "list":
            _need(args, "username")
        if args.action == "create":
            _need(args, "password")
        if args.action == "update" and not (args.password or args.user_type or args.user_status):
            raise UsageError("acl user update needs --password, --user-type or --user-status")
        if args.action in ("create", "update"):  # (bad input: exit 2, before any I/O)
            user_info(args.username, args.password, user_type=args.user_type,
                      user_status=args.user_status)  # fmt: skip
        work = _user
    else:
        if args.action != "list":
            _need(args, "subject")
        if args.action in ("create", "update"):
            _need(args, "resources", "actions")
            acl_info(args.subject, _words(args.resources), _words(args.actions),
                     decision=args.decision or "Allow",
                     source_ips=_words(args.source_ips))  # fmt: skip
        work = _policy
    emit(args, run_with_instance(work, args), _render)
    return 0


def _common(p: argparse.ArgumentParser) -> None:
    add_common(p)
    add_credentials(p)
    p.add_argument("--cluster", help="only this cluster's brokers")
    p.add_argument("--addr", help="only the broker at this address (a slave too)")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("acl", help="ACL 2.0 users and ACLs of 5.3+ brokers")
    kinds = parser.add_subparsers(dest="kind", required=True, metavar="KIND")

    user = kinds.add_parser("user", help="create, update, delete, get or list users")
    user.add_argument("action", choices=USER_ACTIONS)
    _common(user)
    user.add_argument("--username", "-u", help="the user")
    user.add_argument("--password", "-p", help="create, update: its password")
    user.add_argument("--user-type", "-t", help="create, update: Normal (default) or Super")
    user.add_argument("--user-status", help="update: enable or disable")
    user.add_argument("--filter", help="list: only users whose name contains this")
    user.set_defaults(handler=_run)

    policy = kinds.add_parser("policy", help="create, update, delete, get or list ACLs "
                              "(mqadmin createAcl, ...)")  # fmt: skip
    policy.add_argument("action", choices=POLICY_ACTIONS)
    _common(policy)
    policy.add_argument("--subject", "-s",
                        help="User:NAME (list: only subjects containing this)")  # fmt: skip
    policy.add_argument("--resources", "-r", help="create, update: R[,R...], each * or "
                        "Type:name (Topic:t, Group:g, Topic:prefix*)")  # fmt: skip
    policy.add_argument("--actions", "-a", help="create, update: A[,A...] of Pub, Sub, "
                        "Create, Update, Delete, Get, List, All")  # fmt: skip
    policy.add_argument("--decision", "-d", help="create, update: Allow (default) or Deny")
    policy.add_argument("--source-ips", "-i", help="create, update: IP[,CIDR...] (default any)")
    policy.add_argument("--resource", help="delete: only this resource's entries; "
                        "list: only entries whose resource contains this")  # fmt: skip
    policy.add_argument("--policy-type", help="delete: Custom (default) or Default")
    policy.set_defaults(handler=_run)
