"""The launcher against real RocketMQ JVMs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from rocketmq_actors.producer import LocalTransactionState, Message, TransactionProducer
from rocketmq_actors.protocol.bodies import PERM_WRITE
from rocketmq_actors.testing import probe
from rocketmq_actors.testing.cluster import LocalCluster
from rocketmq_actors.testing.jars import COMPAT_VERSION
from rocketmq_actors.testing.procs import pid_alive

pytestmark = pytest.mark.integration

CLI = [sys.executable, "-m", "rocketmq_actors"]


def _wait_until(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.1)


def _processes_of(state_dir: Path) -> list[int]:
    out = subprocess.run(
        ["pgrep", "-f", str(state_dir)], capture_output=True, text=True, check=False
    )
    return [int(p) for p in out.stdout.split() if int(p) != os.getpid()]


def test_session_cluster_registers_its_broker(rocketmq_cluster: LocalCluster) -> None:
    info = probe.cluster_info(rocketmq_cluster.namesrv_addr)
    broker = rocketmq_cluster.broker("broker-a")
    assert info.clusters == {"DefaultCluster": ("broker-a",)}
    assert info.brokers["broker-a"].broker_addrs == {0: broker.addr}
    route = probe.topic_route(rocketmq_cluster.namesrv_addr, "TBW102")
    assert [q.broker_name for q in route.queue_datas] == ["broker-a"]
    assert route.queue_datas[0].perm & PERM_WRITE
    if not rocketmq_cluster.spec.is_4x:  # told to register at once (probe.register_broker_now)
        logs = rocketmq_cluster.state_dir / "home" / "logs" / "rocketmqlogs"
        text = (logs / "broker.log").read_text(errors="replace")
        assert "new config: [{brokerPermission=6}]" in text


def test_two_masters_kill_and_restart(rocketmq_two_masters: LocalCluster) -> None:
    cluster = rocketmq_two_masters
    assert set(probe.cluster_info(cluster.namesrv_addr).brokers) == {"broker-a", "broker-b"}
    b = cluster.broker("broker-b")
    pid = b.pid
    assert pid is not None
    cluster.kill_broker("broker-b")
    assert not pid_alive(pid)
    # the NameServer drops a broker as soon as its channel closes
    _wait_until(
        lambda: "broker-b" not in probe.cluster_info(cluster.namesrv_addr).brokers,
        30,
        "the NameServer to forget the killed broker",
    )
    cluster.restart_broker("broker-b")
    assert cluster.is_running("broker-b") and b.pid != pid
    info = probe.cluster_info(cluster.namesrv_addr)
    assert info.brokers["broker-b"].broker_addrs == {0: b.addr}


def test_master_and_slave(rocketmq_cluster_factory: Callable[..., LocalCluster]) -> None:
    cluster = rocketmq_cluster_factory(slave=True)
    info = probe.cluster_info(cluster.namesrv_addr)
    assert info.brokers["broker-a"].broker_addrs == {
        0: cluster.broker("broker-a").addr,
        1: cluster.broker("broker-a-s").addr,
    }


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=300, check=False)


def _cli_start(state_dir: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*CLI, "cluster", "start", "--state-dir", str(state_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.once  # (the default version's clusters)
@pytest.mark.elsewhere  # (three cluster starts and a graceful 5.x stop: the longest test)
def test_cli_start_stop_twice_and_in_parallel(tmp_path: Path) -> None:
    first, second = tmp_path / "one", tmp_path / "two"
    beside = _cli_start(second)  # two launchers at once (and it saves one cluster start's wait)
    try:
        for round_no in range(2):
            started = _cli("cluster", "start", "--state-dir", str(first))
            assert started.returncode == 0, started.stderr
            lines = started.stdout.strip().splitlines()
            assert len(lines) == 1, "start prints exactly one JSON line on stdout"
            desc = json.loads(lines[0])
            assert desc["version"] == "5.3.3"
            assert [b["name"] for b in desc["brokers"]] == ["broker-a"]
            assert (
                probe.cluster_info(desc["namesrv"]).brokers["broker-a"].master_addr
                == (desc["brokers"][0]["addr"])
            )
            if round_no == 0:
                # the second cluster, started beside the first: distinct ports, both serve
                out, err = beside.communicate(timeout=300)
                assert beside.returncode == 0, err
                desc2 = json.loads(out)
                assert desc2["namesrv"] != desc["namesrv"]
                assert probe.cluster_info(desc2["namesrv"]).brokers
                again = _cli("cluster", "start", "--state-dir", str(first))
                assert again.returncode == 2 and "already running" in again.stderr
                status = _cli("cluster", "status", "--state-dir", str(second))
                assert status.returncode == 0
                assert json.loads(status.stdout)["registered_brokers"] == [
                    desc2["brokers"][0]["addr"]
                ]
                killed = _cli("cluster", "stop", "--kill", "--state-dir", str(second))
                assert killed.returncode == 0, killed.stderr
                assert _processes_of(second) == []
            # a graceful stop once, then --kill (a graceful 5.x broker stop takes 10-16 s)
            how = [] if round_no == 0 else ["--kill"]
            stopped = _cli("cluster", "stop", *how, "--state-dir", str(first))
            assert stopped.returncode == 0, stopped.stderr
            assert sorted(json.loads(stopped.stdout)["stopped"]) == ["broker-a", "namesrv"]
            assert _processes_of(first) == []
        assert _processes_of(second) == []
        status = _cli("cluster", "status", "--state-dir", str(first))
        assert status.returncode == 3  # nothing running
        assert json.loads(status.stdout)["namesrv_reachable"] is False
    finally:  # a failed assertion must not leave either cluster running
        if beside.poll() is None:
            beside.communicate(timeout=300)
        for state_dir in (first, second):
            if _processes_of(state_dir):
                _cli("cluster", "stop", "--state-dir", str(state_dir))


def _killed_launcher(state_dir: Path | None) -> tuple[list[int], Path]:
    """A process that starts a cluster (in ``state_dir``, or in a directory of its own), then
    is SIGKILLed: no finally, no atexit, only the watchdog can help. Its JVMs' pids and its
    state directory."""
    script = (
        "import sys\n"
        "from rocketmq_actors.testing.cluster import LocalCluster\n"
        f"c = LocalCluster(state_dir={str(state_dir) if state_dir else None!r})\n"
        "c.start()\n"
        "print('PIDS', c.state_dir, *(s.pid for s in c.servers.values()), flush=True)\n"
        "sys.stdin.read()\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    line = ""
    while not line.startswith("PIDS"):  # structlog's default output shares stdout
        line = proc.stdout.readline()
        assert line, "the launcher process exited before printing its pids"
    _, where, *pids = line.split()
    assert len(pids) == 2 and all(pid_alive(int(p)) for p in pids)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    return [int(p) for p in pids], Path(where)


@pytest.mark.once  # (the default version's cluster)
def test_no_jvm_outlives_a_killed_launcher(tmp_path: Path) -> None:
    pids, where = _killed_launcher(tmp_path)
    assert where == tmp_path.resolve()
    _wait_until(lambda: not any(pid_alive(p) for p in pids), 30, "the JVMs to be killed")
    # nothing of the cluster is left: the watchdog (whose command line also names the state
    # directory) exits right after its kills
    _wait_until(lambda: _processes_of(tmp_path) == [], 10, "the watchdog to exit")
    assert (tmp_path / "state.json").exists()  # a directory given to it is the caller's


@pytest.mark.once  # (the default version's cluster)
def test_a_killed_launcher_leaves_nothing_in_the_temporary_directory() -> None:
    """A CI job killed at its time limit: the launcher's own state directory (stores, logs)
    goes with its JVMs."""
    pids, where = _killed_launcher(None)
    assert where.name.startswith("rocketmq-actors-")
    _wait_until(lambda: not any(pid_alive(p) for p in pids), 30, "the JVMs to be killed")
    _wait_until(lambda: not where.exists(), 30, "the state directory to be removed")
    _wait_until(lambda: _processes_of(where) == [], 10, "the watchdog to exit")


@pytest.mark.once  # (4.9.7's cluster, whatever the session's)
def test_compat_version_cluster(rocketmq_cluster_factory: Callable[..., LocalCluster]) -> None:
    """The 4.9 line: its own jar set, logback files in ROCKETMQ_HOME, no bindAddress."""
    cluster = rocketmq_cluster_factory(version=COMPAT_VERSION)
    info = probe.cluster_info(cluster.namesrv_addr)
    assert info.brokers["broker-a"].master_addr == cluster.broker("broker-a").addr
    # a 4.9 NameServer still answers standard-JSON route data to a client version >= 401
    route = probe.topic_route(cluster.namesrv_addr, "TBW102")
    assert route.broker_datas[0].broker_addrs == {0: cluster.broker("broker-a").addr}


def _thread_cpu(pid: int, name: str) -> float:
    """CPU seconds of ``pid``'s threads called ``name`` (``/proc``'s 15-character names)."""
    total = 0.0
    for task in Path(f"/proc/{pid}/task").iterdir():
        stat = (task / "stat").read_text()
        if stat[stat.index("(") + 1 : stat.rindex(")")] == name[:15]:
            fields = stat.rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


async def test_a_committed_transaction_leaves_the_broker_idle(
    rocketmq_cluster: LocalCluster, unique_topic: str, unique_group: str
) -> None:
    """5.5.0's TransactionalOpBatchService busy-loops on a core from 3 s after the last
    commit or rollback (the launcher's transactionOp* settings keep it asleep): a whole core
    of a session's two, until the session ended."""
    if rocketmq_cluster.spec.is_4x:
        pytest.skip("4.x has no TransactionalOpBatchService (it writes op messages at once)")
    pid = rocketmq_cluster.broker("broker-a").pid
    assert pid is not None

    async def commit(message: Message, arg: object) -> LocalTransactionState:
        return LocalTransactionState.COMMIT

    async def check(message: object) -> LocalTransactionState:
        return LocalTransactionState.COMMIT

    async with TransactionProducer(
        namesrv=rocketmq_cluster.namesrv_addr, group=unique_group, checker=check
    ) as producer:
        await producer.send_in_transaction(Message(topic=unique_topic, body=b"x"), commit)
    await anyio.sleep(4.0)  # (the bug's 3 s interval after the commit, which is what it needs)
    before = _thread_cpu(pid, "TransactionalOpBatchService")
    await anyio.sleep(3.0)
    spent = _thread_cpu(pid, "TransactionalOpBatchService") - before
    assert spent < 0.3, f"TransactionalOpBatchService used {spent:.2f} s of CPU in 3 s"
