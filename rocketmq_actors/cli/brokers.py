"""``rocketmq-actors broker status|config|set-config|wipe-write-perm|add-write-perm`` and
``cluster list`` (mqadmin brokerStatus, getBrokerConfig, updateBrokerConfig, wipeWritePerm,
addWritePerm, clusterList).

cluster list                          every broker node: cluster, name, id, address, version
broker status [--broker NAME | --addr HOST:PORT]   the runtime KVTable of masters (or one)
broker config [--broker NAME | --addr HOST:PORT]   every setting, as each broker runs
broker set-config KEY=VALUE... [--broker NAME | --addr HOST:PORT]   change settings at runtime
broker wipe-write-perm|add-write-perm --broker NAME   in every NameServer's routes
"""

from __future__ import annotations

import argparse
from typing import Any

from rocketmq_actors import admin
from rocketmq_actors.cluster.instance import ClientInstance

from .common import (
    NotFound,
    UsageError,
    add_common,
    emit,
    key_values,
    run_with_instance,
    table,
)

COLUMNS = ["cluster", "broker", "id", "addr", "version", "in_tps", "out_tps"]


async def _cluster_list(instance: ClientInstance, args: argparse.Namespace) -> dict[str, Any]:
    return {"brokers": await admin.cluster_list(instance)}


def _render_cluster(result: dict[str, Any]) -> str:
    return table(result["brokers"], COLUMNS)


def run_cluster_list(args: argparse.Namespace) -> int:
    result = run_with_instance(_cluster_list, args)
    emit(args, result, _render_cluster)
    return 0 if all(row["reachable"] for row in result["brokers"]) else 1


async def _targets(instance: ClientInstance, args: argparse.Namespace) -> dict[str, str]:
    """Broker name -> address: ``--addr``, the master of ``--broker``, or every master."""
    if args.addr:
        return {args.addr: args.addr}
    found = await admin.masters(instance)
    if args.broker:
        if args.broker not in found:
            raise NotFound(f"no broker named {args.broker!r}; have {sorted(found)}")
        found = {args.broker: found[args.broker]}
    return found


async def _status(instance: ClientInstance, args: argparse.Namespace) -> dict[str, Any]:
    return {
        "brokers": {
            name: {"addr": addr, "runtime": await admin.broker_runtime_info(instance, addr)}
            for name, addr in (await _targets(instance, args)).items()
        }
    }


async def _config(instance: ClientInstance, args: argparse.Namespace) -> dict[str, Any]:
    targets = await _targets(instance, args)
    if args.action == "set-config":
        for addr in targets.values():
            await admin.update_broker_config(instance, addr, args.settings)
    return {
        "brokers": {
            name: {"addr": addr, "settings": await admin.broker_config(instance, addr)}
            for name, addr in targets.items()
        }
    }


async def _perm(instance: ClientInstance, args: argparse.Namespace) -> dict[str, Any]:
    change = admin.wipe_write_perm if args.action == "wipe-write-perm" else admin.add_write_perm
    return {"broker": args.broker, "topics_changed": await change(instance, args.broker)}


def _render_perm(result: dict[str, Any]) -> str:
    return "\n".join(f"{addr}: {count} topic(s) of {result['broker']} changed"
                     for addr, count in result["topics_changed"].items())  # fmt: skip


def _render_status(result: dict[str, Any]) -> str:
    blocks = []
    for name, info in result["brokers"].items():
        values = info["runtime"] if "runtime" in info else info["settings"]
        rows = [{"key": k, "value": v} for k, v in values.items()]
        blocks.append(f"{name} ({info['addr']})\n" + table(rows, ["key", "value"]))
    return "\n\n".join(blocks)


def _run_status(args: argparse.Namespace) -> int:
    if args.broker and args.addr:
        raise UsageError("give --broker or --addr, not both")
    if args.action in ("wipe-write-perm", "add-write-perm"):
        if not args.broker or args.addr:
            raise UsageError(f"broker {args.action} needs --broker NAME (not --addr)")
        emit(args, run_with_instance(_perm, args), _render_perm)
        return 0
    if args.action == "set-config":
        args.settings = _settings(args.assignments)
    elif args.assignments:
        raise UsageError(f"broker {args.action} takes no KEY=VALUE")
    work = _status if args.action == "status" else _config
    emit(args, run_with_instance(work, args), _render_status)
    return 0


def _settings(assignments: list[str]) -> dict[str, str]:
    """``KEY=VALUE`` words as settings (before any network I/O)."""
    if not assignments:
        raise UsageError("set-config needs at least one KEY=VALUE")
    return key_values(assignments, "setting")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("broker", help="broker runtime figures and settings; write permission")
    p.add_argument("action", choices=["status", "config", "set-config", "wipe-write-perm",
                                      "add-write-perm"])  # fmt: skip
    p.add_argument("assignments", nargs="*", metavar="KEY=VALUE", help="set-config: settings")
    add_common(p)
    p.add_argument("--broker", help="only the master of this broker name")
    p.add_argument("--addr", help="only this broker address (a slave too)")
    p.set_defaults(handler=_run_status)


def register_cluster_list(actions: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = actions.add_parser("list", help="every broker of the cluster(s) (mqadmin clusterList)")
    add_common(p)
    p.set_defaults(handler=run_cluster_list)
