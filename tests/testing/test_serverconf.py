"""Broker properties the launcher writes for a ClusterSpec."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketmq_actors.testing.cluster import LocalCluster
from rocketmq_actors.testing.jars import LauncherError
from rocketmq_actors.testing.serverconf import (
    ClusterSpec,
    NetnsPlacement,
    broker_properties,
    jvm_argv,
    plan_servers,
)

ROOT = Path(__file__).resolve().parents[2]


def _props(spec: ClusterSpec, tmp_path: Path) -> dict[str, object]:
    info = plan_servers(spec)["broker-a"]
    return broker_properties(spec, info, namesrv_port=9876, master_ha_port=1, state_dir=tmp_path)


def test_trace_turns_on_the_trace_topic(tmp_path: Path) -> None:
    assert _props(ClusterSpec(trace=True), tmp_path)["traceTopicEnable"] == "true"
    assert "traceTopicEnable" not in _props(ClusterSpec(), tmp_path)


def test_5x_brokers_write_op_messages_at_once_and_keep_the_op_thread_asleep(
    tmp_path: Path,
) -> None:
    """(5.5.0 busy-loops otherwise: tests/testing/test_cluster_real.py holds the real broker
    to it.) 4.x has no such setting: its broker writes op messages at once."""
    props = _props(ClusterSpec(version="5.5.0"), tmp_path)
    assert props["transactionOpMsgMaxSize"] == 1
    assert props["transactionOpBatchInterval"] == 2_000_000_000 < 2**31
    assert "transactionOpMsgMaxSize" not in _props(ClusterSpec(version="4.9.7"), tmp_path)


def _conf(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines())


def test_controller_mode_layout(tmp_path: Path) -> None:
    """Controller mode (apache/rocketmq docs/en/controller/deploy.md): the NameServer embeds
    the controller on its port + 1; both nodes of broker-a start as id-less slaves pointing
    at it, acknowledging only what the whole SyncStateSet has."""
    cluster = LocalCluster(ClusterSpec(controller=True), state_dir=tmp_path)
    cluster._layout()
    ns_port = cluster.servers["namesrv"].port
    assert cluster.controller_addr == f"127.0.0.1:{ns_port + 1}"
    namesrv = _conf(tmp_path / "conf" / "namesrv.conf")
    assert namesrv["enableControllerInNamesrv"] == "true"
    assert namesrv["controllerDLegerPeers"] == f"n0-127.0.0.1:{ns_port + 1}"
    assert namesrv["controllerDLegerSelfId"] == "n0"
    assert namesrv["controllerStorePath"].startswith(str(tmp_path))
    assert namesrv["enableElectUncleanMaster"] == "false"
    assert set(cluster.servers) == {"namesrv", "broker-a", "broker-a-s"}
    for name in ("broker-a", "broker-a-s"):
        props = _conf(tmp_path / "conf" / f"{name}.conf")
        assert props["brokerName"] == "broker-a"
        assert props["brokerId"] == "-1" and props["brokerRole"] == "SLAVE"
        assert props["enableControllerMode"] == "true"
        assert props["controllerAddr"] == cluster.controller_addr
        assert props["allAckInSyncStateSet"] == "true"
        assert cluster.servers[name].broker_id is None  # the controller assigns it


def test_controller_mode_needs_5x() -> None:
    with pytest.raises(LauncherError, match="controller mode needs RocketMQ 5"):
        ClusterSpec(version="4.9.7", controller=True)


def test_no_controller_outside_controller_mode(tmp_path: Path) -> None:
    cluster = LocalCluster(ClusterSpec(), state_dir=tmp_path)
    cluster._layout()
    with pytest.raises(LauncherError, match="no controller"):
        _ = cluster.controller_addr
    assert "enableControllerInNamesrv" not in _conf(tmp_path / "conf" / "namesrv.conf")


def test_a_broker_in_a_network_namespace(tmp_path: Path) -> None:
    placement = NetnsPlacement(netns="rmq-t", listen_ip="10.231.7.2", namesrv_ip="10.231.6.1")
    spec = ClusterSpec(brokers=2, netns={"broker-b": placement})
    cluster = LocalCluster(spec, state_dir=tmp_path)
    cluster._layout()
    info = cluster.servers["broker-b"]
    assert info.addr == f"10.231.7.2:{info.port}"
    assert cluster.servers["broker-a"].addr.startswith("127.0.0.1:")
    props = _conf(tmp_path / "conf" / "broker-b.conf")
    assert props["brokerIP1"] == props["bindAddress"] == "10.231.7.2"
    assert props["namesrvAddr"] == f"10.231.6.1:{cluster.servers['namesrv'].port}"
    # the NameServer listens where the namespace can reach it
    assert _conf(tmp_path / "conf" / "namesrv.conf")["bindAddress"] == "0.0.0.0"
    argv = jvm_argv(spec, info, java="java", lib=tmp_path, state_dir=tmp_path)
    assert argv[:5] == ["ip", "netns", "exec", "rmq-t", "java"]
    plain = jvm_argv(
        spec, cluster.servers["broker-a"], java="java", lib=tmp_path, state_dir=tmp_path
    )
    assert plain[0] == "java"


def test_a_nameserver_in_a_network_namespace(tmp_path: Path) -> None:
    """The brokers and the launcher dial it at its namespace address; it listens on every
    interface of its namespace."""
    placement = NetnsPlacement(netns="rmq-n", listen_ip="10.231.9.2")
    spec = ClusterSpec(netns={"namesrv": placement})
    cluster = LocalCluster(spec, state_dir=tmp_path)
    cluster._layout()
    port = cluster.servers["namesrv"].port
    assert cluster.namesrv_addr == f"10.231.9.2:{port}"
    assert _conf(tmp_path / "conf" / "broker-a.conf")["namesrvAddr"] == f"10.231.9.2:{port}"
    assert _conf(tmp_path / "conf" / "namesrv.conf")["bindAddress"] == "0.0.0.0"
    info = cluster.servers["namesrv"]
    assert jvm_argv(spec, info, java="java", lib=tmp_path, state_dir=tmp_path)[:4] == [
        "ip", "netns", "exec", "rmq-n"
    ]  # fmt: skip


def test_test_clusters_compile_with_c1_only_and_benchmarks_ask_for_c2(tmp_path: Path) -> None:
    """jit="quick" (the default: a test's cluster) stops at C1; "full" leaves HotSpot's tiers
    alone, for the brokers benchmarks measure against (benchmarks/jvmstart.py: both)."""
    for jit, expected in (("quick", True), ("full", False)):
        spec = ClusterSpec(jit=jit)  # type: ignore[arg-type]
        cluster = LocalCluster(spec, state_dir=tmp_path / jit)
        cluster._layout()
        for info in cluster.servers.values():
            argv = jvm_argv(spec, info, java="java", lib=tmp_path, state_dir=tmp_path)
            assert ("-XX:TieredStopAtLevel=1" in argv) is expected
    assert ClusterSpec().jit == "quick"
    with pytest.raises(ValueError):
        ClusterSpec(jit="fast")  # type: ignore[arg-type]
    benchmarks = ROOT / "benchmarks"
    starts = [
        line for path in benchmarks.glob("*.py") if path.name != "jvmstart.py"
        for line in path.read_text().splitlines()
        if "LocalCluster(" in line and "import" not in line
    ]  # fmt: skip
    assert starts and all('jit="full"' in line for line in starts), starts
