"""The launcher's typed, early errors - no JVM needs to start for these."""

from __future__ import annotations

import os
import random
import shutil
import stat
import subprocess
from collections import namedtuple
from pathlib import Path
from typing import Any

import attrs
import pytest

from rocketmq_actors.testing import cluster as cluster_mod
from rocketmq_actors.testing import jars
from rocketmq_actors.testing.cluster import ClusterSpec, DiskFull, LocalCluster, StartupFailed
from rocketmq_actors.testing.jars import DownloadFailed, LauncherError, ToolMissing
from rocketmq_actors.testing.serverconf import pick_port, write_properties

Usage = namedtuple("Usage", "total used free")


def test_java_missing_is_a_typed_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ToolMissing, match="java"):
        jars.find_java()


def test_mvn_missing_when_not_cached(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ToolMissing, match="mvn"):
        jars.resolve_server_jars("5.3.3", cache_dir=tmp_path)


def test_cached_jars_need_no_maven(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    lib = tmp_path / "rocketmq-9.9.9" / "lib"
    lib.mkdir(parents=True)
    (lib / ".complete").write_text("1 jars\n")
    monkeypatch.setenv("PATH", str(tmp_path))  # no mvn anywhere: must not be needed
    assert jars.resolve_server_jars("9.9.9", cache_dir=tmp_path) == lib


@pytest.mark.skipif(shutil.which("mvn") is None, reason="needs mvn to attempt a download")
def test_unknown_version_is_a_download_failure(tmp_path: Path) -> None:
    with pytest.raises(DownloadFailed, match=r"0\.0\.1-does-not-exist"):
        jars.resolve_server_jars("0.0.1-does-not-exist", cache_dir=tmp_path)
    # nothing half-downloaded is left to be mistaken for a finished cache
    assert not (tmp_path / "rocketmq-0.0.1-does-not-exist" / "lib").exists()
    # Maven worked in a repository of its own, removed afterwards; the user's ~/.m2 (where
    # Maven would record the failed lookup) was not written
    left = sorted(p.name for p in (tmp_path / "rocketmq-0.0.1-does-not-exist").iterdir())
    assert left == [".lock", "maven.log"]
    assert not (Path.home() / ".m2/repository/org/apache/rocketmq/rocketmq-namesrv"
                / "0.0.1-does-not-exist").exists()  # fmt: skip


def test_unpublished_version_is_refused_up_front() -> None:
    with pytest.raises(LauncherError, match=r"4\.9\.7"):
        LocalCluster(ClusterSpec(version="4.9.8"))


def test_5_5_1_names_what_maven_central_lacks(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # refused before Maven would be looked for
    with pytest.raises(jars.UnpublishedVersion) as raised:
        jars.resolve_server_jars("5.5.1", cache_dir=tmp_path)
    text = str(raised.value)
    assert "rocketmq-broker jar is published" in text
    for absent in ("rocketmq-namesrv", "rocketmq-tools", "rocketmq-client"):
        assert absent in text
    assert text.endswith("use 5.5.0")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(jars.UnpublishedVersion, match=r"use 5\.5\.0"):
        LocalCluster(ClusterSpec(version="5.5.1"))


# Maven 3.9's line for `-Drocketmq.version=5.5.1`, as it printed it on 2026-11-25
MAVEN_551 = (
    "[ERROR] Failed to execute goal on project rocketmq-server-jars: Could not resolve "
    "dependencies for project io.github.rocketmq-actors:rocketmq-server-jars:pom:1: The "
    "following artifacts could not be resolved: org.apache.rocketmq:rocketmq-namesrv:jar:5.5.1, "
    "org.apache.rocketmq:rocketmq-srvutil:jar:5.5.1, org.apache.rocketmq:rocketmq-tools:jar:"
    "5.5.1, org.apache.rocketmq:rocketmq-client:jar:5.5.1: Could not find artifact "
    "org.apache.rocketmq:rocketmq-namesrv:jar:5.5.1 in central -> [Help 1]\n"
)


def test_download_failure_names_the_missing_artifacts(tmp_path: Path) -> None:
    assert jars.missing_artifacts(MAVEN_551) == [
        "rocketmq-namesrv", "rocketmq-srvutil", "rocketmq-tools", "rocketmq-client"
    ]  # fmt: skip
    assert jars.missing_artifacts("[ERROR] network is unreachable") == []
    log = tmp_path / "maven.log"
    log.write_text(MAVEN_551)
    failure = jars._download_failure("5.5.1", 1, log)
    assert "rocketmq-namesrv, rocketmq-srvutil, rocketmq-tools, rocketmq-client could not" in str(
        failure
    )
    assert "(resolved: rocketmq-broker)" in str(failure)
    log.write_text("[ERROR] network is unreachable\n")
    assert "network is unreachable" in str(jars._download_failure("5.5.1", 1, log))


def test_spec_rejects_three_brokers() -> None:
    with pytest.raises(ValueError):
        ClusterSpec(brokers=3)  # type: ignore[arg-type]


def test_full_disk_refused_before_any_jvm(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(cluster_mod, "resolve_server_jars", lambda version: tmp_path)
    monkeypatch.setattr(
        "rocketmq_actors.testing.cluster.shutil.disk_usage", lambda p: Usage(100, 89, 11)
    )
    launched: list[str] = []
    monkeypatch.setattr(LocalCluster, "_launch", lambda self, java, name: launched.append(name))
    with pytest.raises(DiskFull, match="89%"):
        LocalCluster(state_dir=tmp_path / "state").start()
    assert launched == []


def _fake_java(tmp_path: Path, script: str) -> str:
    path = tmp_path / "java"
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def test_jvm_exiting_during_startup_reports_its_log(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    java = _fake_java(tmp_path, 'echo "Error: config file is broken"; exit 3\n')
    monkeypatch.setattr(cluster_mod, "find_java", lambda: java)
    monkeypatch.setattr(cluster_mod, "resolve_server_jars", lambda version: tmp_path)
    cluster = LocalCluster(state_dir=tmp_path / "state")
    with pytest.raises(StartupFailed, match="exited with code 3") as info:
        cluster.start()
    assert "config file is broken" in str(info.value)


def test_jvm_that_never_becomes_ready_hits_the_deadline(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    java = _fake_java(tmp_path, 'echo "still booting"; exec sleep 60\n')
    monkeypatch.setattr(cluster_mod, "find_java", lambda: java)
    monkeypatch.setattr(cluster_mod, "resolve_server_jars", lambda version: tmp_path)
    cluster = LocalCluster(ClusterSpec(startup_timeout=1.0), state_dir=tmp_path / "state")
    with pytest.raises(StartupFailed, match="within 1s") as info:
        cluster.start()
    assert "still booting" in str(info.value)
    # the failed start cleaned up after itself
    assert all(s.pid is None for s in cluster.servers.values())


def test_picked_ports_are_distinct_and_bindable() -> None:
    taken: set[int] = set()
    bases = [pick_port(taken, (0, -2, 1)) for _ in range(20)]
    ports = [p for b in bases for p in (b, b - 2, b + 1)]
    assert len(set(ports)) == len(ports)
    assert all(20000 <= p < 32000 for p in ports)


@pytest.mark.parametrize("draw", ["lowest", "highest"])
def test_picked_ports_stay_in_range_at_the_edges(
    monkeypatch: pytest.MonkeyPatch, draw: str
) -> None:
    # the lowest and the highest base the generator may draw keep every offset in range
    class EdgeRandom:
        def randrange(self, start: int, stop: int) -> int:
            return start if draw == "lowest" else stop - 1

    monkeypatch.setattr(random, "Random", EdgeRandom)
    base = pick_port(set(), (0, -2, 1))
    assert base - 2 >= 20000
    assert base + 1 < 32000


def test_properties_file_format(tmp_path: Path) -> None:
    path = tmp_path / "x.conf"
    write_properties(path, {"listenPort": 1234, "brokerIP1": "127.0.0.1"})
    assert path.read_text() == "listenPort=1234\nbrokerIP1=127.0.0.1\n"


def test_broker_config_written_for_loopback(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    spec = ClusterSpec(brokers=2, slave=True, broker_config={"maxMessageSize": "1024"})
    cluster = LocalCluster(spec, state_dir=tmp_path)
    cluster._layout()
    confs = {p.stem: p.read_text() for p in (tmp_path / "conf").glob("*.conf")}
    assert set(confs) == {"namesrv", "broker-a", "broker-b", "broker-a-s"}
    for name in ("broker-a", "broker-b", "broker-a-s"):
        props = dict(line.split("=", 1) for line in confs[name].splitlines())
        assert props["brokerIP1"] == props["brokerIP2"] == "127.0.0.1"
        assert props["bindAddress"] == "127.0.0.1"
        assert props["enablePropertyFilter"] == "true"
        assert props["transactionCheckInterval"] == "1000"
        assert props["maxMessageSize"] == "1024"
        info = cluster.servers[name]
        assert int(props["listenPort"]) == info.port
        assert int(props["haListenPort"]) == info.port + 1
    slave = dict(line.split("=", 1) for line in confs["broker-a-s"].splitlines())
    assert slave["brokerId"] == "1" and slave["brokerRole"] == "SLAVE"
    # a 5.x slave takes its master's HA address from its registration (given haMasterAddress,
    # 5.3.3's HA client never connected); a 4.x slave is given it
    assert "haMasterAddress" not in slave
    old = LocalCluster(attrs.evolve(spec, version="4.9.7"), state_dir=tmp_path / "4x")
    old._layout()
    slave_4x = dict(
        line.split("=", 1)
        for line in (tmp_path / "4x/conf/broker-a-s.conf").read_text().splitlines()
    )
    assert slave_4x["haMasterAddress"] == f"127.0.0.1:{old.servers['broker-a'].port + 1}"


def test_4x_gets_logback_files_and_no_bind_address(tmp_path: Path) -> None:
    cluster = LocalCluster(ClusterSpec(version="4.9.7"), state_dir=tmp_path)
    cluster._layout()
    conf = tmp_path / "home" / "conf"
    assert {p.name for p in conf.iterdir()} == {
        "logback_namesrv.xml",
        "logback_broker.xml",
        "logback_tools.xml",
    }
    assert "bindAddress" not in (tmp_path / "conf" / "broker-a.conf").read_text()


def test_from_state_dir_without_state_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(LauncherError, match=r"state\.json"):
        LocalCluster.from_state_dir(tmp_path)


def test_from_state_dir_ignores_reused_pids(tmp_path: Path) -> None:
    cluster = LocalCluster(state_dir=tmp_path)
    cluster._layout()
    cluster.servers["namesrv"].pid = os.getpid()  # alive, but not a JVM of this state dir
    cluster._save_state()
    again = LocalCluster.from_state_dir(tmp_path)
    assert again.servers["namesrv"].pid is None


def test_maven_runs_without_perf_data(monkeypatch: pytest.MonkeyPatch) -> None:
    """Maven's JVM would leave /tmp/hsperfdata_<user> behind: it runs with -XX:-UsePerfData,
    after the user's own MAVEN_OPTS."""
    monkeypatch.setenv("MAVEN_OPTS", "-Xmx1g")
    assert jars._maven_env()["MAVEN_OPTS"] == "-Xmx1g -XX:-UsePerfData"
    monkeypatch.delenv("MAVEN_OPTS")
    assert jars._maven_env()["MAVEN_OPTS"] == "-XX:-UsePerfData"


def test_the_download_runs_maven_with_that_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    seen: list[dict[str, str]] = []

    def fake_run(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[bytes]:
        seen.append(kwargs["env"])
        return subprocess.CompletedProcess(argv, 1)

    monkeypatch.setattr("rocketmq_actors.testing.jars.shutil.which", lambda name: "/usr/bin/mvn")
    monkeypatch.setattr("rocketmq_actors.testing.jars.subprocess.run", fake_run)
    with pytest.raises(DownloadFailed):
        jars.resolve_server_jars("0.0.2-never", cache_dir=tmp_path)
    assert [env["MAVEN_OPTS"].split()[-1] for env in seen] == ["-XX:-UsePerfData"]


def test_a_port_taken_by_a_cluster_starting_beside_is_retried_on_new_ports(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    cluster = LocalCluster(ClusterSpec(), state_dir=tmp_path)
    failures = [StartupFailed("broker-a exited: java.net.BindException: Address already in use")]
    calls: list[int] = []

    def once() -> None:
        calls.append(1)
        if failures:
            raise failures.pop()

    monkeypatch.setattr(cluster, "_start_once", once)
    cluster.start()
    assert len(calls) == 2  # one port clash, then a start on new ports
    always = LocalCluster(ClusterSpec(), state_dir=tmp_path)
    monkeypatch.setattr(always, "_start_once", lambda: (_ for _ in ()).throw(
        StartupFailed("Address already in use")))  # fmt: skip
    with pytest.raises(StartupFailed):
        always.start()  # gives up after PORT_RETRIES more tries
    other = LocalCluster(ClusterSpec(), state_dir=tmp_path)
    tries: list[int] = []

    def broken() -> None:
        tries.append(1)
        raise StartupFailed("broker-a exited: OutOfMemoryError")

    monkeypatch.setattr(other, "_start_once", broken)
    with pytest.raises(StartupFailed, match="OutOfMemoryError"):
        other.start()
    assert tries == [1]  # anything else is not retried
