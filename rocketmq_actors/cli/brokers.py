"""``rocketmq-actors broker status`` and ``cluster list`` (mqadmin brokerStatus, clusterList).

cluster list                          every broker node: cluster, name, id, address, version
broker status [--broker NAME | --addr HOST:PORT]   the runtime KVTable of masters (or one)
"""

from __future__ import annotations

import argparse
from typing import Any

from rocketmq_actors import admin
from rocketmq_actors.cluster.instance import ClientInstance

from .common import NotFound, UsageError, add_common, emit, run_with_instance, table

COLUMNS = ["cluster", "broker", "id", "addr", "version", "in_tps", "out_tps"]


async def _cluster_list(instance: ClientInstance, args: argparse.Namespace) -> dict[str, Any]:
    return {"brokers": await admin.cluster_list(instance)}


def _render_cluster(result: dict[str, Any]) -> str:
    return table(result["brokers"], COLUMNS)


def run_cluster_list(args: argparse.Namespace) -> int:
    result = run_with_instance(_cluster_list, args)
    emit(args, result, _render_cluster)
    return 0 if all(row["reachable"] for row in result["brokers"]) else 1


async def _status(instance: ClientInstance, args: argparse.Namespace) -> dict[str, Any]:
    if args.addr:
        targets = {args.addr: args.addr}
    else:
        found = await admin.masters(instance)
        if args.broker:
            if args.broker not in found:
                raise NotFound(f"no broker named {args.broker!r}; have {sorted(found)}")
            found = {args.broker: found[args.broker]}
        targets = found
    return {
        "brokers": {
            name: {"addr": addr, "runtime": await admin.broker_runtime_info(instance, addr)}
            for name, addr in targets.items()
        }
    }


def _render_status(result: dict[str, Any]) -> str:
    blocks = []
    for name, info in result["brokers"].items():
        rows = [{"key": k, "value": v} for k, v in info["runtime"].items()]
        blocks.append(f"{name} ({info['addr']})\n" + table(rows, ["key", "value"]))
    return "\n\n".join(blocks)


def _run_status(args: argparse.Namespace) -> int:
    if args.broker and args.addr:
        raise UsageError("give --broker or --addr, not both")
    emit(args, run_with_instance(_status, args), _render_status)
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("broker", help="broker runtime figures (mqadmin brokerStatus)")
    p.add_argument("action", choices=["status"])
    add_common(p)
    p.add_argument("--broker", help="only the master of this broker name")
    p.add_argument("--addr", help="only this broker address (a slave too)")
    p.set_defaults(handler=_run_status)


def register_cluster_list(actions: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = actions.add_parser("list", help="every broker of the cluster(s) (mqadmin clusterList)")
    add_common(p)
    p.set_defaults(handler=run_cluster_list)
