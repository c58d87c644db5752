"""``--format``: a message printed as kcat's ``-f`` prints it.

    %t topic   %b broker   %p queue id   %o offset   %k keys (space separated)   %s body
    %S body size   %T store time (ms)   %i message id   %g tags   %h properties (k=v,...)
    %%  a percent sign;  \\n \\t \\\\  a newline, a tab, a backslash

Nothing is added: the format says where lines end (``'%k %s\\n'``), as kcat's does. A body
that is not UTF-8 prints with replacement characters. An unknown ``%x`` is a usage error,
found before anything connects (:func:`check_format`).
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable

from rocketmq_actors.protocol.records import MessageExt

from .common import UsageError

__all__ = ["add_format_flag", "check_format", "render"]

_FIELDS: dict[str, Callable[[MessageExt], str]] = {
    "t": lambda m: m.topic,
    "b": lambda m: m.broker_name,
    "p": lambda m: str(m.queue_id),
    "o": lambda m: str(m.queue_offset),
    "k": lambda m: " ".join(m.keys),
    "s": lambda m: m.body.decode(errors="replace"),
    "S": lambda m: str(len(m.body)),
    "T": lambda m: str(m.store_timestamp),
    "i": lambda m: m.msg_id,
    "g": lambda m: m.tags or "",
    "h": lambda m: ",".join(f"{k}={v}" for k, v in sorted(m.properties.items())),
    "%": lambda m: "%",
}
_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\"}
_TOKEN = re.compile(r"%(.)|\\(.)", re.S)


def check_format(fmt: str) -> None:
    """:class:`UsageError` naming the first directive :func:`render` does not know."""
    for match in _TOKEN.finditer(fmt):
        field, escape = match.groups()
        if field is not None and field not in _FIELDS:
            raise UsageError(f"--format: unknown directive %{field} (known: %{' %'.join(_FIELDS)})")
        if escape is not None and escape not in _ESCAPES:
            raise UsageError(f"--format: unknown escape \\{escape} (known: \\n \\t \\\\)")
    leftover = _TOKEN.sub("", fmt)
    if "%" in leftover or "\\" in leftover:
        raise UsageError("--format ends in the middle of a directive")


def render(fmt: str, message: MessageExt) -> str:
    """``message`` by ``fmt`` (checked by :func:`check_format`)."""

    def one(match: re.Match[str]) -> str:
        field, escape = match.groups()
        return _FIELDS[field](message) if field is not None else _ESCAPES[escape]

    return _TOKEN.sub(one, fmt)


def add_format_flag(
    parser: argparse.ArgumentParser | argparse._MutuallyExclusiveGroup, note: str
) -> None:
    """``--format`` / ``-f`` on ``parser``; ``note`` ends its help."""
    parser.add_argument(
        "--format", "-f", metavar="FMT",
        help=f"each message as FMT (as kcat -f: %%k %%s\\n ...; {note})",
    )  # fmt: skip
