"""A real Apache RocketMQ NameServer and Broker(s), launched with ``java`` on loopback.

Usage::

    with LocalCluster(ClusterSpec(brokers=2)) as cluster:
        print(cluster.namesrv_addr)          # "127.0.0.1:PORT"
        cluster.kill_broker("broker-b")      # kill -9, for fault tests
        cluster.restart_broker("broker-b")   # same ports, same store

Everything lives in one state directory: configs, stores, JVM logs and ``state.json`` (what
``rocketmq-actors cluster stop/status`` read). Ports are chosen free on 127.0.0.1 so several
clusters, or a user's own RocketMQ on 9876, never collide.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

import attrs

from rocketmq_actors.logs import get_logger

from . import probe
from .jars import LauncherError, check_published, find_java, resolve_server_jars
from .procs import (
    log_contains,
    pid_alive,
    pid_is_ours,
    release_watchdog,
    tail,
    wait_stopped,
    watch_pid,
)
from .readiness import BrokerReadiness, namesrv_answers
from .serverconf import (
    BrokerProcessInfo,
    ClusterSpec,
    broker_properties,
    controller_addr,
    jvm_argv,
    namesrv_properties,
    plan_servers,
    write_logback_4x,
    write_plain_acl_4x,
    write_properties,
)

__all__ = [
    "WELL_KNOWN_BROKER_PORT",
    "WELL_KNOWN_NAMESRV_PORT",
    "BrokerProcessInfo",
    "ClusterSpec",
    "DiskFull",
    "LocalCluster",
    "StartupFailed",
]

#: The ports RocketMQ uses by default (and compose.yaml publishes). The launcher does not use
#: them: it picks free ports so it can run beside a cluster that does.
WELL_KNOWN_NAMESRV_PORT = 9876
WELL_KNOWN_BROKER_PORT = 10911

#: A timeout for the first admin requests (``create_topic(..., timeout=FRESH_BROKER_TIMEOUT)``) to
#: a cluster that has just started: its broker answers a topic creation only after registering
#: with the NameServer, which a young JVM on a loaded machine does slowly.
FRESH_BROKER_TIMEOUT = 30.0

#: The broker refuses writes at 90 % disk use; refuse to start at this ratio.
DISK_LIMIT_RATIO = 0.88

log = get_logger("rocketmq_actors.testing")

PORT_RETRIES = 2


class DiskFull(LauncherError):
    """The store directory's disk is too full for a broker to accept writes."""


class StartupFailed(LauncherError):
    """A JVM exited during start-up or did not become ready before the deadline;
    ``server`` names it (``namesrv``, ``broker-a``, ...)."""

    def __init__(self, message: str, server: str | None = None) -> None:
        super().__init__(message)
        self.server = server


# --------------------------------------------------------------------------------------------
# the cluster


class LocalCluster:
    """A NameServer plus one or two broker masters (and optionally a slave) on loopback.

    ``die_with_parent`` (default) starts a watchdog process that SIGKILLs the JVMs when this
    process dies for any reason, so no JVM outlives a test run even on a crash or ``kill -9``;
    the CLI turns it off to leave a cluster running in the background.
    """

    def __init__(
        self,
        spec: ClusterSpec | None = None,
        *,
        state_dir: Path | str | None = None,
        die_with_parent: bool = True,
    ) -> None:
        self.spec = spec or ClusterSpec()
        check_published(self.spec.version)
        self._owns_state_dir = state_dir is None
        self.state_dir = Path(state_dir or tempfile.mkdtemp(prefix="rocketmq-actors-")).resolve()
        self.die_with_parent = die_with_parent
        self.servers: dict[str, BrokerProcessInfo] = {}
        self._procs: dict[str, subprocess.Popen[bytes]] = {}
        self._lib: Path | None = None
        self._log_offsets: dict[str, int] = {}
        self._watchdog: subprocess.Popen[bytes] | None = None
        self.timings: dict[str, float] = {}

    # ---- public surface ---------------------------------------------------------------------

    @property
    def namesrv_addr(self) -> str:
        return self.servers["namesrv"].addr

    @property
    def controller_addr(self) -> str:
        """The embedded controller's address (controller mode only)."""
        if not self.spec.controller:
            raise LauncherError("this cluster runs no controller (ClusterSpec(controller=True))")
        return controller_addr(self.spec, self.servers["namesrv"].port)

    @property
    def brokers(self) -> list[BrokerProcessInfo]:
        return [s for s in self.servers.values() if s.role != "namesrv"]

    def broker(self, name: str) -> BrokerProcessInfo:
        info = self.servers.get(name)
        if info is None or info.role == "namesrv":
            raise KeyError(f"no broker process named {name!r}; have {list(self.servers)}")
        return info

    def describe(self) -> dict[str, Any]:
        """The JSON object ``rocketmq-actors cluster start`` prints."""
        return {
            "namesrv": self.namesrv_addr,
            "brokers": [
                {
                    "name": b.broker_name,
                    "id": b.broker_id,
                    "role": b.role,
                    "addr": b.addr,
                    "pid": b.pid,
                }
                for b in self.brokers
            ],
            "version": self.spec.version,
            "state_dir": str(self.state_dir),
        }

    def __enter__(self) -> LocalCluster:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> None:
        """Resolve jars, write configs, start NameServer then brokers; return when all serve.
        Ports are free when chosen, but another cluster starting beside this one (make test
        runs three) can bind one first: a JVM that then fails to bind is started again, on
        new ports, up to ``PORT_RETRIES`` times."""
        for attempt in range(PORT_RETRIES + 1):
            try:
                return self._start_once()
            except StartupFailed as exc:
                # (a NameServer port given in the spec is not chosen again: the caller decides)
                fixed = self.spec.namesrv_port is not None and exc.server == "namesrv"
                if attempt == PORT_RETRIES or fixed or "Address already in use" not in str(exc):
                    raise
                log.warning("cluster.port_taken", attempt=attempt + 1, error=str(exc)[:200])

    def _start_once(self) -> None:
        started = time.monotonic()
        java = find_java()
        self._jars()
        self.timings["jars_s"] = time.monotonic() - started
        self._check_state_dir()
        self._layout()
        try:
            t0 = time.monotonic()
            self._launch(java, "namesrv")
            self._wait_namesrv()
            self.timings["namesrv_s"] = time.monotonic() - t0
            t1 = time.monotonic()
            # a slave learns its master's HA address when it registers with the NameServer,
            # which knows it only once the master has registered: 4.x and controller-mode
            # slaves start after their masters; other 5.x slaves start beside them and are
            # told to register again once the masters have (readiness.BrokerReadiness)
            at_once = not (self.spec.is_4x or self.spec.controller)
            masters = [info for info in self.brokers if info.role == "master"]
            slaves = [info for info in self.brokers if info.role == "slave"]
            for info in masters + (slaves if at_once else []):
                self._launch(java, info.name)
            for info in masters:
                self._wait_broker(info, elected=True)
            for info in [] if at_once else slaves:
                self._launch(java, info.name)
            for info in slaves:
                self._wait_broker(info)
            self.timings["brokers_s"] = time.monotonic() - t1
        except BaseException:
            self.stop()
            raise
        self.timings["total_s"] = time.monotonic() - started
        self._save_state()
        log.info(
            "cluster.started",
            namesrv=self.namesrv_addr,
            brokers=[b.addr for b in self.brokers],
            version=self.spec.version,
            seconds=round(self.timings["total_s"], 2),
        )

    def stop(self, *, graceful: bool = True) -> None:
        """SIGTERM every JVM (brokers first), SIGKILL what is left after ``stop_timeout``.

        A graceful 5.x broker stop takes about 16 s (its POP revive services wait out their
        intervals). ``graceful=False`` sends SIGKILL at once: right for throwaway test clusters,
        whose stores are deleted anyway.
        """
        sig = signal.SIGTERM if graceful else signal.SIGKILL
        order = [n for n in self.servers if n != "namesrv"] + ["namesrv"]
        for name in order:
            if name in self.servers:
                self._terminate(name, sig)
        for name in order:
            if name in self.servers:
                self._wait_exit(name, self.spec.stop_timeout, kill=True)
        self._save_state()
        release_watchdog(self._watchdog)
        self._watchdog = None
        log.info("cluster.stopped", state_dir=str(self.state_dir))
        if self._owns_state_dir:
            shutil.rmtree(self.state_dir, ignore_errors=True)

    def kill_broker(self, name: str) -> None:
        """``kill -9`` one broker process and wait until it is gone."""
        self.broker(name)
        self._terminate(name, signal.SIGKILL)
        self._wait_exit(name, 10.0, kill=True)
        log.info("cluster.broker.killed", name=name)

    def pause_broker(self, name: str) -> None:
        """``SIGSTOP`` one broker and wait until it has stopped: its sockets stay open,
        nothing answers (a GC pause, a hung host). :meth:`resume_broker` continues it."""
        self._signal(name, signal.SIGSTOP)
        pid = self.broker(name).pid
        if pid is not None and not wait_stopped(pid):
            raise LauncherError(f"broker {name} did not stop after SIGSTOP")
        log.info("cluster.broker.paused", name=name)

    def resume_broker(self, name: str) -> None:
        self._signal(name, signal.SIGCONT)
        log.info("cluster.broker.resumed", name=name)

    def _signal(self, name: str, sig: signal.Signals) -> None:
        info = self.broker(name)
        if info.pid is None or not pid_alive(info.pid):
            raise LauncherError(f"broker {name} is not running")
        os.kill(info.pid, sig)

    def stop_broker(self, name: str) -> None:
        """Graceful stop of one broker (SIGTERM)."""
        self.broker(name)
        self._terminate(name, signal.SIGTERM)
        self._wait_exit(name, self.spec.stop_timeout, kill=True)

    def restart_broker(self, name: str) -> None:
        """Start a stopped or killed broker again on the same ports and store."""
        info = self.broker(name)
        if info.pid is not None and pid_alive(info.pid):
            raise LauncherError(f"broker {name} is still running (pid {info.pid})")
        self._launch(find_java(), name)
        self._wait_broker(info)
        self._save_state()
        log.info("cluster.broker.restarted", name=name, addr=info.addr)

    def heal(self) -> None:
        """Every broker running again, as after :meth:`start`: a paused one resumed, a killed
        or stopped one restarted (what a shared cluster's next user expects)."""
        for info in self.brokers:
            if self.is_running(info.name):
                self.resume_broker(info.name)  # (a running broker ignores SIGCONT)
            else:
                self.restart_broker(info.name)

    def is_running(self, name: str) -> bool:
        info = self.servers[name]
        return info.pid is not None and pid_alive(info.pid)

    # ---- state file (for the CLI) ------------------------------------------------------------

    def _save_state(self) -> None:
        state = {
            "spec": {
                "version": self.spec.version,
                "brokers": self.spec.brokers,
                "slave": self.spec.slave,
                "controller": self.spec.controller,
            },
            "servers": [attrs.asdict(s) for s in self.servers.values()],
            "timings": self.timings,
        }
        if self.state_dir.is_dir():
            (self.state_dir / "state.json").write_text(json.dumps(state, indent=2))

    @classmethod
    def from_state_dir(cls, state_dir: Path | str) -> LocalCluster:
        """Re-attach to a cluster that ``rocketmq-actors cluster start`` left running."""
        path = Path(state_dir).resolve()
        try:
            state = json.loads((path / "state.json").read_text())
        except FileNotFoundError:
            raise LauncherError(f"no cluster state in {path} (state.json missing)") from None
        spec = ClusterSpec(**state["spec"])
        cluster = cls(spec, state_dir=path, die_with_parent=False)
        for raw in state["servers"]:
            info = BrokerProcessInfo(**raw)
            if info.pid is not None and not pid_is_ours(info.pid, str(path)):
                info.pid = None  # exited, or the pid was reused by something else
            cluster.servers[info.name] = info
        return cluster

    def status(self) -> dict[str, Any]:
        servers = [
            {"name": s.name, "addr": s.addr, "pid": s.pid, "running": self.is_running(s.name)}
            for s in self.servers.values()
        ]
        registered: list[str] = []
        reachable = False
        if "namesrv" in self.servers:
            with contextlib.suppress(probe.ProbeError, LauncherError):
                info = probe.cluster_info(self.namesrv_addr, timeout=2.0)
                reachable = True
                registered = sorted(
                    addr for b in info.brokers.values() for addr in b.broker_addrs.values()
                )
        return {
            "state_dir": str(self.state_dir),
            "version": self.spec.version,
            "servers": servers,
            "namesrv_reachable": reachable,
            "registered_brokers": registered,
        }

    # ---- internals ----------------------------------------------------------------------------

    def _check_state_dir(self) -> None:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        for info in self.servers.values():
            if info.pid is not None and pid_alive(info.pid):
                raise LauncherError(f"a cluster is already running in {self.state_dir}")
        if (self.state_dir / "state.json").is_file():
            previous = LocalCluster.from_state_dir(self.state_dir)
            alive = [s.name for s in previous.servers.values() if s.pid is not None]
            if alive:
                raise LauncherError(
                    f"a cluster is already running in {self.state_dir} ({', '.join(alive)}); "
                    f"stop it first: rocketmq-actors cluster stop --state-dir {self.state_dir}"
                )
        usage = shutil.disk_usage(self.state_dir)
        ratio = (usage.total - usage.free) / usage.total if usage.total else 0.0
        if ratio >= DISK_LIMIT_RATIO:
            raise DiskFull(
                f"the disk holding {self.state_dir} is {ratio:.0%} full; a RocketMQ broker "
                f"refuses every write at 90 %. Free space or pass another --state-dir."
            )

    def _layout(self) -> None:
        """Choose ports and write configs; wipes stores and logs of an earlier run."""
        for sub in ("home", "conf", "store", "logs", "tmp"):
            shutil.rmtree(self.state_dir / sub, ignore_errors=True)
            (self.state_dir / sub).mkdir(parents=True)
        if self.spec.is_4x:
            write_logback_4x(self.state_dir / "home")
            if self.spec.acl is not None:
                write_plain_acl_4x(self.state_dir / "home", *self.spec.acl)
        self.servers = plan_servers(self.spec)
        ns_port = self.servers["namesrv"].port
        conf = self.state_dir / "conf"
        write_properties(
            conf / "namesrv.conf", namesrv_properties(self.spec, ns_port, self.state_dir)
        )
        for info in self.brokers:
            props = broker_properties(
                self.spec,
                info,
                namesrv_port=ns_port,
                master_ha_port=self.servers["broker-a"].port + 1,
                state_dir=self.state_dir,
                namesrv_host=self.servers["namesrv"].host,
            )
            write_properties(conf / f"{info.name}.conf", props)

    def _jars(self) -> Path:
        if self._lib is None:
            self._lib = resolve_server_jars(self.spec.version)
        return self._lib

    def _log_path(self, name: str) -> Path:
        return self.state_dir / "logs" / f"{name}.out"

    def _launch(self, java: str, name: str) -> None:
        info = self.servers[name]
        log_path = self._log_path(name)
        env = dict(os.environ, ROCKETMQ_HOME=str(self.state_dir / "home"))
        env.pop("JAVA_TOOL_OPTIONS", None)
        with open(log_path, "ab") as out:
            out.write(f"\n==== launch {time.strftime('%H:%M:%S')} ====\n".encode())
            out.flush()
            offset = out.tell()
            proc = subprocess.Popen(
                jvm_argv(
                    self.spec,
                    self.servers[name],
                    java=java,
                    lib=self._jars(),
                    state_dir=self.state_dir,
                ),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                cwd=self.state_dir,
                start_new_session=True,  # Ctrl-C reaches us, not the JVMs; stop() ends them
            )
        self._procs[name] = proc
        self._watch(proc.pid)
        self._log_offsets[name] = offset
        info.pid = proc.pid
        log.info("cluster.process.launched", name=name, pid=proc.pid, port=info.port)

    def _watch(self, pid: int) -> None:
        if self.die_with_parent:
            self._watchdog = watch_pid(self._watchdog, self.state_dir, pid,
                                       owned=self._owns_state_dir)  # fmt: skip

    def _boot_line_seen(self, name: str) -> bool:
        return log_contains(self._log_path(name), self._log_offsets.get(name, 0), b"boot success")

    def _poll(self, name: str, ready: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + self.spec.startup_timeout
        while True:
            proc = self._procs.get(name)
            if proc is not None and proc.poll() is not None:
                raise StartupFailed(
                    f"{name} exited with code {proc.returncode} during start-up; "
                    f"log {self._log_path(name)}:\n{tail(self._log_path(name))}",
                    name,
                )
            if ready():
                return
            if time.monotonic() > deadline:
                raise StartupFailed(
                    f"{name} did not {what} within {self.spec.startup_timeout:.0f}s; "
                    f"log {self._log_path(name)}:\n{tail(self._log_path(name))}",
                    name,
                )
            # polling an external JVM: there is no event to wait on
            time.sleep(0.1)

    def _wait_namesrv(self) -> None:
        def ready() -> bool:
            return self._boot_line_seen("namesrv") and namesrv_answers(self.namesrv_addr)

        self._poll("namesrv", ready, "answer a cluster-info request")

    def _wait_broker(self, info: BrokerProcessInfo, *, elected: bool = False) -> None:
        """Until the NameServer lists ``info`` (:class:`.readiness.BrokerReadiness`)."""
        registered = BrokerReadiness(
            self.namesrv_addr, info, elected=elected, is_4x=self.spec.is_4x,
            permission=self.spec.broker_config.get("brokerPermission", "6"),
        )  # fmt: skip
        self._poll(
            info.name, lambda: registered(self._boot_line_seen(info.name)),
            "register with the NameServer",
        )  # fmt: skip

    def _terminate(self, name: str, sig: signal.Signals) -> None:
        info = self.servers[name]
        if info.pid is None:
            return
        proc = self._procs.get(name)
        if proc is not None:
            if proc.poll() is None:
                proc.send_signal(sig)
        elif pid_is_ours(info.pid, str(self.state_dir)):
            with contextlib.suppress(ProcessLookupError):
                os.kill(info.pid, sig)

    def _wait_exit(self, name: str, timeout: float, *, kill: bool) -> None:
        info = self.servers[name]
        if info.pid is None:
            return
        proc = self._procs.pop(name, None)
        if proc is not None:
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                if not kill:
                    raise
                log.warning("cluster.process.kill", name=name, pid=proc.pid)
                proc.kill()
                proc.wait()
        else:  # not our child (re-attached from a state dir): poll the pid
            deadline = time.monotonic() + timeout
            while pid_is_ours(info.pid, str(self.state_dir)) and pid_alive(info.pid):
                if time.monotonic() > deadline:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(info.pid, signal.SIGKILL)
                    deadline = time.monotonic() + 10
                time.sleep(0.1)
        info.pid = None
