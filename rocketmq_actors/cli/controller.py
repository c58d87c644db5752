"""``rocketmq-actors controller metadata|sync-state|elect-master``: the 5.x controller of a
controller-mode cluster (mqadmin getControllerMetaData, getSyncStateSet, electMaster).

controller metadata --controller HOST:PORT                  group, leader, peers
controller sync-state --controller HOST:PORT --broker NAME...   each broker set's replicas
controller elect-master --controller HOST:PORT --cluster C --broker NAME --broker-id N
"""

from __future__ import annotations

import argparse
from typing import Any

import attrs

from rocketmq_actors import admin
from rocketmq_actors.adminbase import check_addr
from rocketmq_actors.cluster.instance import ClientInstance

from .common import UsageError, add_common, add_credentials, emit, run_with_instance, table


async def _work(instance: ClientInstance, args: argparse.Namespace) -> dict[str, Any]:
    if args.action == "metadata":
        return attrs.asdict(await admin.controller_metadata(instance, args.controller))
    if args.action == "sync-state":
        found = await admin.sync_state_data(instance, args.controller, args.broker)
        return {"brokers": {name: attrs.asdict(info) for name, info in found.items()}}
    result = await admin.elect_master(instance, args.controller, args.cluster, args.broker[0],
                                      args.broker_id)  # fmt: skip
    # (the broker ids, int keys, are strings in the JSON printed)
    return {"cluster": args.cluster, "broker": args.broker[0], **attrs.asdict(result)}


def _render(result: dict[str, Any]) -> str:
    if "peers" in result:
        rows = [{"key": k, "value": result[k]}
                for k in ("group", "leader_id", "leader_addr", "is_leader")]  # fmt: skip
        rows += [{"key": f"peer {pid}", "value": addr} for pid, addr in result["peers"].items()]
        return table(rows, ["key", "value"])
    if "brokers" in result:
        rows = [
            {"broker": name, "id": r["broker_id"], "addr": r["addr"],
             "master": r["broker_id"] == info["master_broker_id"], "in_sync": in_sync,
             "alive": r["alive"], "master_epoch": info["master_epoch"],
             "sync_state_set_epoch": info["sync_state_set_epoch"]}
            for name, info in result["brokers"].items()
            for in_sync, key in ((True, "in_sync"), (False, "not_in_sync"))
            for r in info[key]
        ]  # fmt: skip
        return table(rows, ["broker", "id", "addr", "master", "in_sync", "alive",
                            "master_epoch", "sync_state_set_epoch"])  # fmt: skip
    state = "elected" if result["elected"] else "kept (no new election)"
    return (
        f"{result['broker']}: master {result['master_broker_id']} at {result['master_addr']} "
        f"{state}, master epoch {result['master_epoch']}, "
        f"sync state set epoch {result['sync_state_set_epoch']}"
    )


def _run(args: argparse.Namespace) -> int:
    if not args.controller:
        raise UsageError(f"controller {args.action} needs --controller HOST:PORT")
    check_addr("--controller", args.controller)
    if args.action != "metadata" and not args.broker:
        raise UsageError(f"controller {args.action} needs --broker NAME")
    elect = args.action == "elect-master"
    if elect and (not args.cluster or args.broker_id is None or len(args.broker) != 1):
        raise UsageError("controller elect-master needs --cluster, one --broker and --broker-id")
    emit(args, run_with_instance(_work, args), _render)
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("controller", help="the 5.x controller: metadata, sync state, "
                       "elect a master")  # fmt: skip
    p.add_argument("action", choices=("metadata", "sync-state", "elect-master"))
    add_common(p)
    add_credentials(p)
    p.add_argument("--controller", help="a controller's address (a broker's controllerAddr)")
    p.add_argument("--broker", action="append", metavar="NAME", help="sync-state: a broker "
                   "set (repeat for more); elect-master: the one")  # fmt: skip
    p.add_argument("--cluster", help="elect-master: the broker set's cluster")
    p.add_argument("--broker-id", type=int, help="elect-master: the node to make the master")
    p.set_defaults(handler=_run)
