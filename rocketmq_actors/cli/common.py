"""What every admin-style command shares: the ``--namesrv`` option (``NAMESRV_ADDR`` by
default, as the Java tools), ``--json`` or a table, and running one coroutine."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import anyio

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.errors import RocketMQError
from rocketmq_actors.protocol.acl import AclCredentials

__all__ = [
    "STATE",
    "NotFound",
    "UsageError",
    "add_common",
    "add_credentials",
    "add_namesrv",
    "check_namesrv",
    "credentials",
    "emit",
    "key_values",
    "run_with_instance",
    "table",
]

Work = Callable[[ClientInstance, argparse.Namespace], Awaitable[Any]]


class UsageError(Exception):
    """A user mistake: printed as one line, exit status 2, no traceback."""


class NotFound(RocketMQError):
    """What the command names does not exist on the cluster: exit status 1."""


class _State:
    """Whether the command has begun starting a client: a ``ValueError`` (ConfigError,
    InvalidMessage...) raised before is a usage mistake (exit 2), one raised after is work
    that failed (exit 1)."""

    client_started = False


STATE = _State()


def add_namesrv(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--namesrv",
        default=os.environ.get("NAMESRV_ADDR"),
        help="NameServer address(es), host:port[;host:port] (default: $NAMESRV_ADDR)",
    )


def check_namesrv(args: argparse.Namespace) -> None:
    """A command that talks to a cluster needs --namesrv or $NAMESRV_ADDR: say both. (A
    command whose actions do not all need one checks it itself.)"""
    if "namesrv_checked_by_command" in vars(args):
        return
    if "namesrv" in vars(args) and not args.namesrv:
        raise UsageError(f"{args.command}: give --namesrv host:port, or set $NAMESRV_ADDR")


def add_common(p: argparse.ArgumentParser) -> None:
    add_namesrv(p)
    p.add_argument("--json", action="store_true", help="one JSON document on stdout")


def add_credentials(p: argparse.ArgumentParser) -> None:
    """``--access-key`` / ``--secret-key`` (``ROCKETMQ_ACCESS_KEY`` / ``ROCKETMQ_SECRET_KEY``
    by default): every request is signed with them (ACL)."""
    p.add_argument(
        "--access-key",
        default=os.environ.get("ROCKETMQ_ACCESS_KEY"),
        help="ACL access key (user name) to sign requests with (default: $ROCKETMQ_ACCESS_KEY)",
    )
    p.add_argument(
        "--secret-key",
        default=os.environ.get("ROCKETMQ_SECRET_KEY"),
        help="ACL secret key (password); prefer $ROCKETMQ_SECRET_KEY to keep it out of ps",
    )


def credentials(args: argparse.Namespace) -> AclCredentials | None:
    """The command's ACL credentials (:func:`add_credentials`), None without them; one
    without the other is a :class:`UsageError`."""
    access, secret = getattr(args, "access_key", None), getattr(args, "secret_key", None)
    if bool(access) != bool(secret):
        raise UsageError("give both --access-key and --secret-key (or neither)")
    return AclCredentials(access, secret) if access and secret else None


def key_values(items: Sequence[str], what: str) -> dict[str, str]:
    """``KEY=VALUE`` words as a mapping; a word without ``=`` or a key is a
    :class:`UsageError` naming ``what`` (before any network I/O)."""
    pairs = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"{what} {item!r}: expected KEY=VALUE")
        pairs[key] = value
    return pairs


def table(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> str:
    """Fixed-width columns, numbers right-aligned; ``None`` shows as ``-``."""
    cells = [[("-" if r.get(c) is None else str(r.get(c))) for c in columns] for r in rows]
    widths = [max([len(c), *(len(row[i]) for row in cells)]) for i, c in enumerate(columns)]
    numeric = [all(isinstance(r.get(c), int | float) and not isinstance(r.get(c), bool)
                   for r in rows if r.get(c) is not None)
               and any(r.get(c) is not None for r in rows) for c in columns]  # fmt: skip

    def line(values: Sequence[str]) -> str:
        return "  ".join(
            v.rjust(w) if num else v.ljust(w)
            for v, w, num in zip(values, widths, numeric, strict=True)
        ).rstrip()

    return "\n".join([line(columns), *(line(row) for row in cells)])


def emit(args: argparse.Namespace, result: Any, render: Callable[[Any], str]) -> None:
    sys.stdout.write((json.dumps(result) if args.json else render(result)) + "\n")


def run_with_instance(work: Work, args: argparse.Namespace) -> Any:
    """``work(instance, args)`` inside a started client instance, in a fresh event loop."""

    creds = credentials(args)

    async def main() -> Any:
        client = ClientInstance(args.namesrv, credentials=creds)
        STATE.client_started = True
        async with client as instance:
            return await work(instance, args)

    return anyio.run(main)
