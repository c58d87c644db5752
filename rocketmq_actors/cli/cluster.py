"""``rocketmq-actors cluster start|stop|status|list``: a real RocketMQ cluster in the background
(``list`` asks any cluster's NameServer for its brokers).

``start`` prints one JSON line on stdout (what scripts parse) and, on stderr, the line
``export NAMESRV_ADDR=127.0.0.1:PORT`` to paste (``--export`` prints only that line, on
stdout, for ``eval "$(rocketmq-actors cluster start --export)"``). The NameServer listens on
9876 when that port is free, else on a free random port; ``--namesrv-port 0`` always picks a
random one.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import attrs

from rocketmq_actors.testing.cluster import (
    WELL_KNOWN_NAMESRV_PORT,
    ClusterSpec,
    LocalCluster,
    StartupFailed,
)
from rocketmq_actors.testing.jars import DEFAULT_VERSION, LauncherError
from rocketmq_actors.testing.serverconf import can_bind

from .brokers import register_cluster_list


def default_state_dir() -> Path:
    xdg = os.environ.get("XDG_STATE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".local" / "state"
    return base / "rocketmq-actors" / "cluster"


def _emit(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def namesrv_port(requested: int | None) -> int | None:
    """The NameServer port to ask for: ``requested`` (0: random), else 9876 when it is free
    (what a new user's copied ``127.0.0.1:9876`` expects), else random (None)."""
    if requested is not None:
        if not 0 <= requested <= 65535:
            raise LauncherError(f"--namesrv-port {requested} is not a port")
        return requested or None
    free = can_bind(WELL_KNOWN_NAMESRV_PORT, "0.0.0.0")
    return WELL_KNOWN_NAMESRV_PORT if free else None


def spec_of(args: argparse.Namespace, port: int | None) -> ClusterSpec:
    """The cluster ``cluster start`` asks for (``port``: :func:`namesrv_port`'s)."""
    if args.slave_read and not (args.slave or args.controller):
        raise LauncherError("--slave-read needs a slave: add --slave (or --controller)")
    return ClusterSpec(
        version=args.version,
        brokers=args.brokers,
        slave=args.slave,
        controller=args.controller,
        trace=args.trace,
        startup_timeout=args.timeout,
        namesrv_port=port,
        # a slave serves pulls only with slaveReadEnable (false by default; a 5.x slave then
        # serves nothing), which the masters read too: they suggest the slave when they lag
        broker_config={"slaveReadEnable": "true"} if args.slave_read else {},
    )


def _start(args: argparse.Namespace) -> int:
    port = namesrv_port(args.namesrv_port)
    spec = spec_of(args, port)
    cluster = LocalCluster(spec, state_dir=args.state_dir, die_with_parent=False)
    try:
        cluster.start()
    except StartupFailed:
        # 9876 was free when chosen, and another start (a second `cluster start` at the
        # same moment) took it first: our NameServer could not bind; random port instead
        if args.namesrv_port is not None or port is None or can_bind(port, "0.0.0.0"):
            raise
        spec = attrs.evolve(spec, namesrv_port=None)
        cluster = LocalCluster(spec, state_dir=args.state_dir, die_with_parent=False)
        cluster.start()
    export = f"export NAMESRV_ADDR={cluster.namesrv_addr}"
    if args.export:
        sys.stdout.write(export + "\n")
    else:
        _emit(cluster.describe())
        sys.stderr.write(export + "\n")
    return 0


def _stop(args: argparse.Namespace) -> int:
    cluster = LocalCluster.from_state_dir(args.state_dir)
    stopped = [s.name for s in cluster.servers.values() if s.pid is not None]
    cluster.stop(graceful=not args.kill)
    _emit({"state_dir": str(cluster.state_dir), "stopped": stopped})
    return 0


def _status(args: argparse.Namespace) -> int:
    cluster = LocalCluster.from_state_dir(args.state_dir)
    status = cluster.status()
    _emit(status)
    return 0 if all(s["running"] for s in status["servers"]) else 3


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("cluster", help="run a real local RocketMQ cluster (needs java, mvn)")
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")

    def state_dir_arg(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--state-dir",
            type=Path,
            default=default_state_dir(),
            help="configs, stores, logs and state.json of this cluster (default: %(default)s)",
        )

    start = actions.add_parser("start", help="start in the background, print one JSON line")
    start.add_argument("--brokers", type=int, choices=(1, 2), default=1, help="broker masters")
    start.add_argument("--slave", action="store_true", help="add a slave of broker-a")
    start.add_argument(
        "--slave-read", action="store_true",
        help="brokers with slaveReadEnable: the slave serves pulls (a 5.x slave serves none "
        "without it)",
    )  # fmt: skip
    start.add_argument(
        "--controller", action="store_true",
        help="5.x controller mode: broker-a runs as two nodes and a controller in the "
        "NameServer elects its master, promoting the other when it dies",
    )  # fmt: skip
    start.add_argument("--version", default=DEFAULT_VERSION, help="RocketMQ server version")
    start.add_argument(
        "--trace", action="store_true", help="brokers with traceTopicEnable (message trace)"
    )
    start.add_argument("--timeout", type=float, default=120.0, help="start-up deadline, seconds")
    start.add_argument(
        "--namesrv-port",
        type=int,
        default=None,
        help="NameServer port (default: 9876 when free, else random; 0: random)",
    )
    start.add_argument(
        "--export",
        action="store_true",
        help="print only 'export NAMESRV_ADDR=...' on stdout (for eval) instead of the JSON",
    )
    state_dir_arg(start)
    start.set_defaults(handler=_start)

    stop = actions.add_parser("stop", help="stop the cluster of a state dir")
    stop.add_argument(
        "--kill",
        action="store_true",
        help="SIGKILL at once instead of SIGTERM (a graceful 5.x broker stop takes 10-16 s; "
        "the store may then need recovery on the next start)",
    )
    state_dir_arg(stop)
    stop.set_defaults(handler=_stop)

    status = actions.add_parser("status", help="print process and registration state as JSON")
    state_dir_arg(status)
    status.set_defaults(handler=_status)

    register_cluster_list(actions)
