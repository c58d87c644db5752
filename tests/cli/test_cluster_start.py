"""``cluster start``: the NameServer port it asks for, and the export line it prints."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from rocketmq_actors.cli import cluster as cluster_cmd
from rocketmq_actors.testing.jars import LauncherError
from rocketmq_actors.testing.serverconf import ClusterSpec, can_bind, pick_port, plan_servers

from ._run import cli


@contextlib.contextmanager
def _hold(port: int) -> Iterator[None]:
    """Keep ``port`` busy (if it is not already)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # as the JVM binds: a port left in TIME_WAIT by an earlier test's NameServer must not
        # make the hold fail while the JVM (SO_REUSEADDR) could still take it
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        with contextlib.suppress(OSError):  # someone else listens on it: busy all the same
            sock.bind(("0.0.0.0", port))
            sock.listen()
        yield


def test_9876_when_free_else_random(monkeypatch: pytest.MonkeyPatch) -> None:
    with _hold(9876):
        assert cluster_cmd.namesrv_port(None) is None  # busy: a random free port
    monkeypatch.setattr(cluster_cmd, "can_bind", lambda port, host: True)
    assert cluster_cmd.namesrv_port(None) == 9876
    assert cluster_cmd.namesrv_port(0) is None  # asked for random
    assert cluster_cmd.namesrv_port(24680) == 24680


def test_the_spec_port_is_the_namesrv_port_and_brokers_avoid_it() -> None:
    port = pick_port(set(), (0,))
    servers = plan_servers(ClusterSpec(namesrv_port=port, brokers=2))
    assert servers["namesrv"].port == port
    assert port not in {s.port for s in servers.values() if s.role != "namesrv"}
    assert plan_servers(ClusterSpec())["namesrv"].port != 9876  # tests: random, coexisting


@pytest.mark.integration
@pytest.mark.once  # (the default version's cluster)
@pytest.mark.solo  # a port of its choice: twice, under the sessions' load, the start hung
def test_start_prints_json_on_stdout_and_the_export_line_on_stderr(tmp_path: Path) -> None:
    state = str(tmp_path / "cluster")
    for _ in range(2):  # the port is free when picked; another session may take it first
        port = pick_port(set(), (0,))
        started = cli("cluster", "start", "--state-dir", state, "--namesrv-port", str(port))
        if "Address already in use" not in started.stderr:
            break
    assert started.returncode == 0, started.stderr  # (nothing to stop otherwise)
    try:
        desc = json.loads(started.stdout)  # stdout: exactly the JSON, for scripts
        assert desc["namesrv"] == f"127.0.0.1:{port}"
        assert f"export NAMESRV_ADDR=127.0.0.1:{port}\n" in started.stderr
        assert not can_bind(port, "0.0.0.0")
        # the pasted line is enough for the other commands
        env = {**os.environ, "NAMESRV_ADDR": desc["namesrv"]}
        listed = subprocess.run(
            [sys.executable, "-m", "rocketmq_actors", "cluster", "list", "--json"],
            capture_output=True, text=True, timeout=60, check=False, env=env,
        )  # fmt: skip
        assert listed.returncode == 0, listed.stderr
        brokers = json.loads(listed.stdout)["brokers"]
        assert [(b["broker"], b["reachable"]) for b in brokers] == [("broker-a", True)]
        again = cli("cluster", "start", "--state-dir", state, "--export")
        assert again.returncode == 2 and "already running" in again.stderr
    finally:
        stopped = cli("cluster", "stop", "--kill", "--state-dir", state)
    assert stopped.returncode == 0, stopped.stderr


@pytest.mark.integration
@pytest.mark.once  # (the default version's cluster)
def test_a_start_that_loses_9876_to_another_takes_a_random_port(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two starts at once both find 9876 free; the one whose NameServer cannot bind it
    starts again on a random port instead of failing."""
    from rocketmq_actors.cli import main

    answers = iter([True])  # the first look says free; later ones look for real
    monkeypatch.setattr(
        cluster_cmd, "can_bind", lambda port, host: next(answers, None) or can_bind(port, host)
    )
    state = str(tmp_path / "cluster")
    with _hold(9876):
        try:
            assert main(["cluster", "start", "--state-dir", state]) == 0
        finally:
            stopped = cli("cluster", "stop", "--kill", "--state-dir", state)
    out, err = capsys.readouterr()
    namesrv = json.loads(out)["namesrv"]
    assert namesrv != "127.0.0.1:9876" and f"export NAMESRV_ADDR={namesrv}" in err
    assert stopped.returncode == 0, stopped.stderr


def _start_args(*argv: str) -> argparse.Namespace:
    from rocketmq_actors.cli import build_parser

    return build_parser().parse_args(["cluster", "start", *argv])


def test_slave_read_and_controller_reach_the_spec_and_the_broker_config(tmp_path: Path) -> None:
    """Issue 44: --slave alone gives a 5.x slave that serves no pull (slaveReadEnable is false
    by default); --slave-read enables it on every broker, --controller asks for a controller
    set. Checked on the launcher's plan and properties, without starting a JVM."""
    from rocketmq_actors.testing.serverconf import broker_properties

    spec = cluster_cmd.spec_of(_start_args("--slave", "--slave-read"), None)
    servers = plan_servers(spec)
    slave = next(info for info in servers.values() if info.role == "slave")
    props = broker_properties(spec, slave, namesrv_port=9876, master_ha_port=10912,
                              state_dir=tmp_path)  # fmt: skip
    assert props["slaveReadEnable"] == "true"
    plain = cluster_cmd.spec_of(_start_args("--slave"), None)
    assert "slaveReadEnable" not in broker_properties(
        plain, slave, namesrv_port=9876, master_ha_port=10912, state_dir=tmp_path
    )
    controller = cluster_cmd.spec_of(_start_args("--controller", "--slave-read"), None)
    assert controller.controller and controller.has_slave
    with pytest.raises(LauncherError, match="--slave-read needs a slave"):
        cluster_cmd.spec_of(_start_args("--slave-read"), None)
