"""The cluster of the network-namespace scenarios (test_netns_faults.py, test_netns_loss.py):
two masters, ``broker-b`` in a network namespace of its own reached over two veth pairs -
one the client dials (its ``brokerIP1``), one it reaches the NameServer over - so either path
can be cut or degraded alone while the other keeps working. conftest.py's ``topology``
fixture starts one per module that asks for it."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator

import attrs
import pytest

from rocketmq_actors.testing.cluster import ClusterSpec, LocalCluster
from rocketmq_actors.testing.serverconf import NetnsPlacement

from .netns import Namespace, NetnsUnavailable, VethLink, leftovers

# broker-b <-> NameServer: how soon the NameServer may drop a silent broker. Its default is
# 120 s (RouteInfoManager.DEFAULT_BROKER_CHANNEL_EXPIRED_TIME); a broker may ask for its own
# (brokerNotActiveTimeoutMillis, sent only with enableSlaveActingMaster, BrokerController
# .registerBrokerAll), and re-registers every registerNameServerPeriod (10 s at least)
BROKER_CONFIG = {
    "enableSlaveActingMaster": "true",
    "skipPreOnline": "true",
    "brokerNotActiveTimeoutMillis": "10000",
    "registerNameServerPeriod": "10000",
}


@attrs.frozen
class Topology:
    cluster: LocalCluster
    ns: Namespace
    to_namesrv: VethLink  # broker-b -> NameServer
    to_client: VethLink  # client -> broker-b (its brokerIP1)


def namespace_or_skip() -> Namespace:
    """A new namespace (the caller exits it), or the test skipped with the reason."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("network namespaces need root and iproute2 (ip)")
    try:
        return Namespace().__enter__()
    except NetnsUnavailable as exc:
        pytest.skip(str(exc))


@contextlib.contextmanager
def netns_topology(version: str) -> Iterator[Topology]:
    """The cluster started, then stopped and its namespace removed (asserted: nothing of
    ours is left), also when the test fails."""
    ns = namespace_or_skip()
    try:
        to_namesrv, to_client = ns.add_link(), ns.add_link()
        placement = NetnsPlacement(
            netns=ns.name, listen_ip=to_client.ns_ip, namesrv_ip=to_namesrv.root_ip
        )
        spec = ClusterSpec(
            version=version, brokers=2, netns={"broker-b": placement}, broker_config=BROKER_CONFIG
        )
        cluster = LocalCluster(spec)
        cluster.start()
        try:
            yield Topology(cluster, ns, to_namesrv, to_client)
        finally:
            cluster.stop(graceful=False)
    finally:
        ns.close()
        assert leftovers([ns.name]) == [], "network namespaces, links or tables left behind"
