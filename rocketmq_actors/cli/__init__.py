"""The ``rocketmq-actors`` command line (also ``python -m rocketmq_actors``).

Exit statuses (docs/cli.md): 0 done; 1 the command ran and its work failed - an unreachable
NameServer, an unknown topic or group, a broker that refused, sends that failed - one line on
stderr, no traceback; 2 a usage mistake refused before any client starts (bad or missing
arguments, a malformed address, a bad handler spec, an invalid message) or a local cluster
the launcher cannot start or find in its state dir; 3 ``cluster status``: not every server
runs; 130 interrupted.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from contextlib import nullcontext

from rocketmq_actors._version import __version__
from rocketmq_actors.errors import RocketMQError, unwrap_group
from rocketmq_actors.extras import uvloop_policy
from rocketmq_actors.logs import configure_logging
from rocketmq_actors.testing.jars import LauncherError

from . import acl as acl_cmd
from . import bench as bench_cmd
from . import brokers as brokers_cmd
from . import cluster as cluster_cmd
from . import consume as consume_cmd
from . import controller as controller_cmd
from . import groups as groups_cmd
from . import messages as messages_cmd
from . import peek as peek_cmd
from . import produce as produce_cmd
from . import topics as topics_cmd
from .common import STATE, UsageError, check_namesrv

__all__ = ["UsageError", "main"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rocketmq-actors",
        description="Apache RocketMQ from Python: a local cluster, produce, consume, inspect.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument(
        "--log-level", default="warning", help="log level for diagnostics on stderr"
    )
    parser.add_argument("--log-json", action="store_true", help="log as JSON lines on stderr")
    parser.add_argument("--uvloop", action="store_true", help="run on uvloop (the uvloop extra)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    cluster_cmd.register(sub)
    produce_cmd.register(sub)
    consume_cmd.register(sub)
    peek_cmd.register(sub)
    topics_cmd.register(sub)
    groups_cmd.register(sub)
    messages_cmd.register(sub)
    brokers_cmd.register(sub)
    acl_cmd.register(sub)
    controller_cmd.register(sub)
    bench_cmd.register(sub)
    _logging_flags_everywhere(parser)
    return parser


def _logging_flags_everywhere(parser: argparse.ArgumentParser) -> None:
    """``--log-level`` and ``--log-json`` after any (sub)command too, as before it: each
    subparser takes them with no default of its own, so the one given anywhere wins."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in set(action.choices.values()):
                child.add_argument("--log-level", default=argparse.SUPPRESS,
                                   help="log level for diagnostics on stderr")  # fmt: skip
                child.add_argument("--log-json", action="store_true", default=argparse.SUPPRESS,
                                   help="log as JSON lines on stderr")  # fmt: skip
                _logging_flags_everywhere(child)


def exit_status(leaf: BaseException, *, client_started: bool = False) -> int | None:
    """2 for a usage mistake, 1 for work that failed, None for a bug (re-raised)."""
    # a missing optional package (the extras' MissingExtra is an ImportError) is set-up, not
    # work; ConfigError and InvalidMessage are ValueErrors: bad input when refused before a
    # client starts, work that failed after (a broker too old for a feature, say)
    if isinstance(leaf, UsageError | ImportError | LauncherError):
        return 2
    if isinstance(leaf, ValueError) and not client_started:
        return 2
    if isinstance(leaf, RocketMQError | ValueError):
        return 1
    return None


def error_line(leaf: BaseException) -> str:
    """An error as the command line prints it: one line, no traceback, its notes after its
    message (which brokers took an admin change before one refused it, say)."""
    text = "; ".join([str(leaf), *getattr(leaf, "__notes__", ())])
    return " ".join(text.split()) or type(leaf).__name__


def main(argv: Sequence[str] | None = None) -> int:
    """The ``rocketmq-actors`` command (``python -m rocketmq_actors``): its exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    STATE.client_started = False
    try:
        configure_logging(json=args.log_json, level=args.log_level)  # (a bad level: exit 2)
        check_namesrv(args)
        with uvloop_policy() if args.uvloop else nullcontext():
            status: int = args.handler(args)
    except BaseException as exc:
        leaf = unwrap_group(exc)
        if isinstance(leaf, KeyboardInterrupt):
            sys.stderr.write("rocketmq-actors: interrupted\n")
            return 130
        code = exit_status(leaf, client_started=STATE.client_started)
        if code is None:
            raise
        sys.stderr.write(f"rocketmq-actors: error: {error_line(leaf)}\n")
        return code
    return status
