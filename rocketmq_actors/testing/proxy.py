"""A RocketMQ 5 Proxy (``rocketmq-proxy`` from Maven Central) in cluster mode, in front of a
running local cluster: the gRPC endpoint the official 5.x clients speak (and a remoting port).

    with LocalCluster() as cluster, LocalProxy(cluster.namesrv_addr) as proxy:
        ...  # a gRPC client on proxy.grpc_addr

Its configuration, logs and home live in a temporary directory removed at exit; a watchdog
kills the JVM if this process dies, as it does the cluster's. The Proxy listens on every
interface (``ProxyConfig`` of 5.3.3 names ports, no bind address), so its two ports are chosen
free on every interface.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

from rocketmq_actors.logs import get_logger

from .jars import DEFAULT_VERSION, LauncherError, find_java, resolve_proxy_jars
from .procs import log_contains, release_watchdog, tail, watch_pid
from .serverconf import pick_port

__all__ = ["LocalProxy"]

log = get_logger("rocketmq_actors.testing")


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


class LocalProxy:
    """``rocketmq-proxy`` ``version`` for the cluster of ``namesrv_addr`` (``cluster``: its
    ``brokerClusterName``); ``grpc_addr`` once entered."""

    def __init__(
        self,
        namesrv_addr: str,
        *,
        version: str = DEFAULT_VERSION,
        cluster: str = "DefaultCluster",
        startup_timeout: float = 120.0,
        heap_mb: int = 512,
    ) -> None:
        self.namesrv_addr = namesrv_addr
        self.version = version
        self.cluster = cluster
        self.startup_timeout = startup_timeout
        self.heap_mb = heap_mb
        self.grpc_port = 0
        self.remoting_port = 0
        self.state_dir: Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._watchdog: subprocess.Popen[bytes] | None = None

    @property
    def grpc_addr(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    @property
    def log_path(self) -> Path:
        assert self.state_dir is not None
        return self.state_dir / "proxy.out"

    def __enter__(self) -> LocalProxy:
        lib = resolve_proxy_jars(self.version)
        self.state_dir = Path(tempfile.mkdtemp(prefix="rocketmq-actors-proxy-"))
        try:
            self._start(lib, self.state_dir)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _start(self, lib: Path, state: Path) -> None:
        # free on every interface (the Proxy binds them all), two apart, never the same
        self.grpc_port = pick_port(set(), (0,))
        self.remoting_port = pick_port({self.grpc_port}, (0,))
        config = state / "rmq-proxy.json"
        config.write_text(
            json.dumps({
                "rocketMQClusterName": self.cluster, "namesrvAddr": self.namesrv_addr,
                "grpcServerPort": self.grpc_port, "remotingListenPort": self.remoting_port,
            })
        )  # fmt: skip
        argv = [
            find_java(), f"-Xmx{self.heap_mb}m", "-XX:-UsePerfData", f"-Duser.home={state}",
            f"-Djava.io.tmpdir={state}", "-cp", f"{lib}/*",
            "org.apache.rocketmq.proxy.ProxyStartup", "-pc", str(config), "-pm", "cluster",
        ]  # fmt: skip
        env = dict(os.environ, ROCKETMQ_HOME=str(state))
        env.pop("JAVA_TOOL_OPTIONS", None)
        with open(self.log_path, "wb") as out:
            self._proc = subprocess.Popen(
                argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                cwd=state, start_new_session=True,
            )  # fmt: skip
        self._watchdog = watch_pid(self._watchdog, state, self._proc.pid, owned=True)
        deadline = time.monotonic() + self.startup_timeout
        while not (
            log_contains(self.log_path, 0, b"rocketmq-proxy startup successfully")
            and _accepts(self.grpc_port)
        ):
            if self._proc.poll() is not None or time.monotonic() > deadline:
                what = f"exited {self._proc.returncode}" if self._proc.poll() is not None else (
                    f"did not start within {self.startup_timeout:.0f}s")  # fmt: skip
                raise LauncherError(
                    f"rocketmq-proxy {self.version} {what}; its output:\n{tail(self.log_path)}"
                )
            # polling an external JVM: there is no event to wait on
            time.sleep(0.1)
        log.info("proxy.started", grpc=self.grpc_addr, pid=self._proc.pid)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(5)  # (its orderly shutdown takes longer; nothing to keep)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        release_watchdog(self._watchdog)
        self._watchdog = None
        if self.state_dir is not None:
            shutil.rmtree(self.state_dir, ignore_errors=True)
