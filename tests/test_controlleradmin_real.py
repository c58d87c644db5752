"""The 5.x controller's metadata, sync state and master election against a real
controller-mode cluster (``rocketmq_actors.controlleradmin``, re-exported by
``rocketmq_actors.admin``; the ``controller`` CLI command): the controller embedded in the
NameServer, ``broker-a`` a broker set of two nodes (``ClusterSpec(controller=True)``)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import anyio
import pytest

from rocketmq_actors import admin
from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.errors import ConfigError
from rocketmq_actors.protocol.controller_bodies import ReplicasInfo
from rocketmq_actors.testing.cluster import LocalCluster

from .cli._run import aok_json
from .controller_set import controller_set

pytestmark = [pytest.mark.integration, pytest.mark.slow]

# both nodes registered and in the SyncStateSet; the NameServer naming a newly elected master:
# bounds, not measurements
IN_SYNC_LIMIT = 60.0
ROUTE_LIMIT = 30.0


@pytest.fixture(scope="module")
def controller_cluster(request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    yield from controller_set(request, "controller mode")


async def _until(
    instance: ClientInstance, controller: str, limit: float,
    check: Callable[[ReplicasInfo], bool], what: str,
) -> ReplicasInfo:  # fmt: skip
    """``broker-a``'s replicas once ``check(info)`` holds, asking every 200 ms (the
    controller is another process: nothing to wait on)."""
    deadline = time.monotonic() + limit
    while True:
        info = (await admin.sync_state_data(instance, controller, ["broker-a"])).get("broker-a")
        if info is not None and check(info):
            return info
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {limit:.0f}s: {what}; last: {info}")
        await anyio.sleep(0.2)


async def test_metadata_sync_state_and_an_election(controller_cluster: LocalCluster) -> None:
    cluster, ctrl = controller_cluster, controller_cluster.controller_addr
    first, standby = cluster.broker("broker-a").addr, cluster.broker("broker-a-s").addr
    async with ClientInstance(cluster.namesrv_addr) as instance:
        meta = await admin.controller_metadata(instance, ctrl)
        assert (meta.leader_addr, meta.is_leader, dict(meta.peers)) == (ctrl, True, {"n0": ctrl})
        assert meta.group == "group1" and meta.leader_id == "n0"

        info = await _until(instance, ctrl, IN_SYNC_LIMIT, lambda i: len(i.in_sync) == 2,
                            "both nodes of broker-a in the SyncStateSet")  # fmt: skip
        assert info.master_addr == first and not info.not_in_sync
        ids = {r.addr: r.broker_id for r in info.in_sync}
        assert set(ids) == {first, standby} and all(r.alive for r in info.in_sync)
        assert info.master_broker_id == ids[first]
        assert await admin.sync_state_data(instance, ctrl, ["no-such-broker"]) == {}

        # the master itself: the controller keeps it, no new epoch
        kept = await admin.elect_master(instance, ctrl, "DefaultCluster", "broker-a", ids[first])
        assert (kept.elected, kept.master_broker_id, kept.master_addr) == (
            False, ids[first], first)  # fmt: skip
        assert kept.master_epoch == info.master_epoch

        # the standby: a real election
        moved = await admin.elect_master(instance, ctrl, "DefaultCluster", "broker-a",
                                         ids[standby])  # fmt: skip
        assert (moved.elected, moved.master_broker_id, moved.master_addr) == (
            True, ids[standby], standby)  # fmt: skip
        assert moved.master_epoch == info.master_epoch + 1
        assert moved.broker_addrs == {ids[first]: first, ids[standby]: standby}
        after = await _until(instance, ctrl, ROUTE_LIMIT, lambda i: i.master_addr == standby,
                             "the controller names the standby master")  # fmt: skip
        assert after.master_epoch == moved.master_epoch
        # the NameServer follows: the standby registers as broker-a's master
        deadline = time.monotonic() + ROUTE_LIMIT
        while (await admin.masters(instance)).get("broker-a") != standby:
            assert time.monotonic() < deadline, "the NameServer still names the old master"
            await anyio.sleep(0.2)

        with pytest.raises(admin.ControllerRefused) as unknown:
            await admin.elect_master(instance, ctrl, "DefaultCluster", "no-such-broker", 1)
        assert unknown.value.code == 2010  # CONTROLLER_BROKER_NEED_TO_BE_REGISTERED
        with pytest.raises(admin.ControllerRefused):  # a NameServer port runs no controller
            await admin.controller_metadata(instance, cluster.namesrv_addr)
        with pytest.raises(ConfigError):
            await admin.elect_master(instance, ctrl, "DefaultCluster", "broker-a", -1)


async def test_the_cli_reads_the_controller_and_elects(controller_cluster: LocalCluster) -> None:
    cluster, ctrl = controller_cluster, controller_cluster.controller_addr
    ns = ("--namesrv", cluster.namesrv_addr, "--controller", ctrl)
    meta = await aok_json("controller", "metadata", *ns)
    assert (meta["leader_addr"], meta["peers"]) == (ctrl, {"n0": ctrl})
    # (an election just before, by the test above, left the old master catching up)
    async with ClientInstance(cluster.namesrv_addr) as instance:
        await _until(instance, ctrl, IN_SYNC_LIMIT, lambda i: len(i.in_sync) == 2,
                     "both nodes of broker-a in the SyncStateSet")  # fmt: skip
    state = await aok_json("controller", "sync-state", *ns, "--broker", "broker-a")
    info = state["brokers"]["broker-a"]
    master = next(r for r in info["in_sync"] if r["broker_id"] == info["master_broker_id"])
    other = next(r for r in info["in_sync"] if r["broker_id"] != info["master_broker_id"])
    which = ("--cluster", "DefaultCluster", "--broker", "broker-a")
    kept = await aok_json("controller", "elect-master", *ns, *which,
                          "--broker-id", str(master["broker_id"]))  # fmt: skip
    assert (kept["elected"], kept["master_addr"]) == (False, master["addr"])
    # the other node: a real election, whichever node the master was
    moved = await aok_json("controller", "elect-master", *ns, *which,
                           "--broker-id", str(other["broker_id"]))  # fmt: skip
    assert (moved["elected"], moved["master_addr"]) == (True, other["addr"])
    assert moved["master_epoch"] == kept["master_epoch"] + 1
