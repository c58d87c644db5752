"""The ``rocketmq-actors`` command line (also ``python -m rocketmq_actors``).

Exit statuses: 0 done; 1 the command ran but some of its work failed (sends that failed);
2 it could not do its work - a user mistake, or a cluster it cannot use (no NameServer
answered, refused credentials, a client that failed to start): one line on stderr, no
traceback; 130 interrupted.
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

from . import admin as admin_cmd
from . import bench as bench_cmd
from . import cluster as cluster_cmd
from . import consume as consume_cmd
from . import produce as produce_cmd

__all__ = ["UsageError", "main"]


class UsageError(Exception):
    """A user mistake: printed as one line, exit status 2, no traceback."""


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
    admin_cmd.register(sub)
    bench_cmd.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    configure_logging(json=args.log_json, level=args.log_level)
    try:
        with uvloop_policy() if args.uvloop else nullcontext():
            status: int = args.handler(args)
    except BaseException as exc:
        leaf = unwrap_group(exc)
        if isinstance(leaf, KeyboardInterrupt):
            sys.stderr.write("rocketmq-actors: interrupted\n")
            return 130
        if isinstance(leaf, UsageError | ValueError | LauncherError | RocketMQError):
            # a user mistake, or a cluster the command cannot use (unreachable NameServer,
            # refused credentials, a failed start): one line, no traceback
            sys.stderr.write(f"rocketmq-actors: error: {leaf}\n")
            return 2
        raise
    return status
