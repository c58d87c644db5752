"""What the launcher writes and runs: the cluster spec, ports, properties files, JVM argv.

Pure functions of a :class:`ClusterSpec` and a state directory (plus free-port probing), so they
are tested without starting a JVM.
"""

from __future__ import annotations

import json
import random
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

import attrs

from .jars import DEFAULT_VERSION, LauncherError

__all__ = [
    "BrokerProcessInfo",
    "ClusterSpec",
    "NetnsPlacement",
    "broker_properties",
    "jvm_argv",
    "namesrv_properties",
    "pick_port",
    "plan_servers",
    "write_logback_4x",
    "write_plain_acl_4x",
    "write_properties",
]


@attrs.frozen(kw_only=True)
class NetnsPlacement:
    """Run one server inside a network namespace the caller created (``ip netns``), listening
    on ``listen_ip`` (what a broker registers, what clients and the launcher dial). A broker
    there reaches the NameServer at ``namesrv_ip`` (the root-namespace end of a veth pair;
    the NameServer then listens on every interface). The NameServer placed in one is dialled
    at its ``listen_ip`` by the brokers and the launcher (``namesrv_ip`` unused)."""

    netns: str
    listen_ip: str
    namesrv_ip: str = ""


def _check_controller(spec: ClusterSpec, attribute: attrs.Attribute[bool], value: bool) -> None:
    if value and spec.version.startswith("4."):
        raise LauncherError(
            f"controller mode needs RocketMQ 5.x (enableControllerMode came with 5.0); "
            f"version {spec.version} has none"
        )


@attrs.frozen(kw_only=True)
class ClusterSpec:
    """What to launch. ``brokers`` masters (``broker-a``, ``broker-b``), optionally a slave of
    ``broker-a``; ``broker_config`` adds or overrides broker properties (ACL, TLS, ...).

    ``controller`` (5.x): automatic failover. The NameServer embeds the controller
    (``enableControllerInNamesrv``) and ``broker-a`` is a broker set of two nodes,
    ``broker-a`` and ``broker-a-s``, both started with ``enableControllerMode`` and
    ``brokerId=-1``: the controller elects the master (the node started first) and promotes
    the other when it dies. Replication is synchronous to the whole SyncStateSet
    (``allAckInSyncStateSet``), so an acknowledged message survives the master's death."""

    version: str = DEFAULT_VERSION
    brokers: Literal[1, 2] = attrs.field(default=1, validator=attrs.validators.in_((1, 2)))
    slave: bool = False
    controller: bool = attrs.field(default=False, validator=_check_controller)
    # process name -> the network namespace it runs in (see NetnsPlacement)
    netns: Mapping[str, NetnsPlacement] = attrs.field(factory=dict)
    # message trace: brokers with traceTopicEnable=true, which create RMQ_SYS_TRACE_TOPIC at
    # start (BrokerController / TopicConfigManager) instead of on the first trace message
    trace: bool = False
    broker_config: Mapping[str, str] = attrs.field(factory=dict)
    # (access key, secret key) of an admin user: brokers then authenticate every request
    # (5.x: ACL 2.0 authentication; 4.x: ACL 1.0 with a plain_acl.yml)
    acl: tuple[str, str] | None = None
    # extra -D system properties of the broker JVMs, e.g. {"tls.server.mode": "enforcing"}
    # (the NameServer keeps its defaults: the launcher's readiness probe speaks plaintext)
    broker_jvm_properties: Mapping[str, str] = attrs.field(factory=dict)
    # the NameServer's port; None: a free random one (what tests want, so clusters coexist)
    namesrv_port: int | None = None
    namesrv_heap_mb: int = 128
    broker_heap_mb: int = 512
    # "quick": the JVMs compile with C1 only (-XX:TieredStopAtLevel=1), so a start costs less
    # CPU (benchmarks/jvmstart.py measures how much): what a test suite starting dozens of
    # clusters on two cores wants; "full": C2 too, the faster broker a benchmark wants
    jit: Literal["quick", "full"] = attrs.field(
        default="quick", validator=attrs.validators.in_(("quick", "full"))
    )
    startup_timeout: float = 120.0
    stop_timeout: float = 20.0

    @property
    def is_4x(self) -> bool:
        return self.version.startswith("4.")

    @property
    def has_slave(self) -> bool:
        """A second node of ``broker-a`` (a slave, or the controller's standby)."""
        return self.slave or self.controller


@attrs.define(kw_only=True)
class BrokerProcessInfo:
    """One server JVM of the cluster."""

    name: str  # process name: "namesrv", "broker-a", "broker-a-s"
    role: Literal["namesrv", "master", "slave"]
    port: int
    broker_name: str | None = None
    broker_id: int | None = None
    pid: int | None = None
    host: str = "127.0.0.1"  # another address when it runs in a network namespace

    @property
    def addr(self) -> str:
        return f"{self.host}:{self.port}"


def can_bind(port: int, host: str) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def pick_port(taken: set[int], offsets: tuple[int, ...]) -> int:
    """A port ``p`` such that ``p + o`` is free for every offset.

    Every ``p + o`` lies in [20000, 32000): above the well-known ports, below
    Linux's ephemeral range (32768 and up), so no outgoing connection takes it.
    """
    rng = random.Random()
    low, high = 20000 - min(offsets, default=0), 32000 - max(offsets, default=0)
    for _ in range(500):
        base = rng.randrange(low, high)
        ports = [base + o for o in offsets]
        if any(p in taken for p in ports):
            continue
        # the HA acceptor binds every interface, the rest loopback only
        if all(can_bind(p, "0.0.0.0") for p in ports):
            taken.update(ports)
            return base
    raise LauncherError("no free loopback port found for the local cluster")


def write_properties(path: Path, props: Mapping[str, object]) -> None:
    lines = [f"{k}={v}" for k, v in props.items()]
    path.write_text("\n".join(lines) + "\n")


LOGBACK_4X = """<configuration>
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>${{user.home}}/logs/rocketmqlogs/{name}.log</file>
    <encoder><pattern>%d{{yyyy-MM-dd HH:mm:ss.SSS}} %-5p [%t] %c{{0}} - %m%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="FILE"/></root>
</configuration>
"""


def write_logback_4x(home: Path) -> None:
    """4.9.x reads ``$ROCKETMQ_HOME/conf/logback_*.xml`` and exits if they are missing."""
    conf = home / "conf"
    conf.mkdir(parents=True, exist_ok=True)
    for name in ("namesrv", "broker", "tools"):
        (conf / f"logback_{name}.xml").write_text(LOGBACK_4X.format(name=name))


def plan_servers(spec: ClusterSpec) -> dict[str, BrokerProcessInfo]:
    """Name, role and free ports of every JVM: NameServer first, then brokers."""
    taken: set[int] = set()
    if spec.namesrv_port is not None:
        taken.add(spec.namesrv_port)
    # the embedded controller (DLedger peer and controller requests) listens on port + 1
    offsets = (0, 1) if spec.controller else (0,)
    if spec.namesrv_port is not None:
        port = spec.namesrv_port
        taken.update(port + o for o in offsets)
    else:
        port = pick_port(taken, offsets)
    ns_placement = spec.netns.get("namesrv")
    servers = {
        "namesrv": BrokerProcessInfo(
            name="namesrv",
            role="namesrv",
            port=port,
            host=ns_placement.listen_ip if ns_placement is not None else "127.0.0.1",
        )
    }
    plan: list[tuple[str, str, int]] = [("broker-a", "broker-a", 0)]
    if spec.brokers == 2:
        plan.append(("broker-b", "broker-b", 0))
    if spec.has_slave:
        plan.append(("broker-a-s", "broker-a", 1))
    for proc_name, broker_name, broker_id in plan:
        placement = spec.netns.get(proc_name)
        servers[proc_name] = BrokerProcessInfo(
            name=proc_name,
            role="master" if broker_id == 0 else "slave",
            port=pick_port(taken, (0, -2, 1)),  # listenPort p, fast channel p-2, HA p+1
            broker_name=broker_name,
            # in controller mode the controller assigns the ids (the master's is 0)
            broker_id=None if spec.controller else broker_id,
            host=placement.listen_ip if placement is not None else "127.0.0.1",
        )
    return servers


def controller_addr(spec: ClusterSpec, namesrv_port: int) -> str:
    return f"127.0.0.1:{namesrv_port + 1}"


def namesrv_properties(spec: ClusterSpec, port: int, state_dir: Path) -> dict[str, object]:
    props: dict[str, object] = {
        "listenPort": port,
        "kvConfigPath": state_dir / "store" / "namesrv" / "kvConfig.json",
    }
    if not spec.is_4x:
        # 5.x only; every interface when a broker in a namespace must reach it over a veth
        props["bindAddress"] = "0.0.0.0" if spec.netns else "127.0.0.1"
    if spec.controller:
        # the quick-start namesrv.conf of apache/rocketmq (distribution/conf/controller): one
        # DLedger peer, which is also the address brokers send controller requests to
        props.update(
            enableControllerInNamesrv="true",
            controllerDLegerGroup="group1",
            controllerDLegerPeers=f"n0-{controller_addr(spec, port)}",
            controllerDLegerSelfId="n0",
            controllerStorePath=state_dir / "store" / "controller",
            enableElectUncleanMaster="false",  # only a SyncStateSet member may become master
            notifyBrokerRoleChanged="true",
        )
    return props


def broker_properties(
    spec: ClusterSpec,
    info: BrokerProcessInfo,
    *,
    namesrv_port: int,
    master_ha_port: int,
    state_dir: Path,
    namesrv_host: str = "127.0.0.1",
) -> dict[str, object]:
    """Broker config: loopback only, small files, fast transaction checks, SQL92 on."""
    store = state_dir / "store" / info.name
    props: dict[str, object] = {
        "brokerClusterName": "DefaultCluster",
        "brokerName": info.broker_name,
        "brokerId": info.broker_id,
        "brokerRole": "SLAVE" if info.role == "slave" else "ASYNC_MASTER",
        "namesrvAddr": f"{namesrv_host}:{namesrv_port}",
        "brokerIP1": "127.0.0.1",
        "brokerIP2": "127.0.0.1",
        "listenPort": info.port,
        "haListenPort": info.port + 1,
        "storePathRootDir": store,
        "storePathCommitLog": store / "commitlog",
        "autoCreateTopicEnable": "true",
        "autoCreateSubscriptionGroup": "true",
        "defaultTopicQueueNums": 4,
        "enablePropertyFilter": "true",
        "enableCalcFilterBitMap": "true",
        "flushDiskType": "ASYNC_FLUSH",
        "fileReservedTime": 48,
        "mappedFileSizeCommitLog": 104857600,
        "maxHashSlotNum": 50000,
        "maxIndexNum": 200000,
        "diskMaxUsedSpaceRatio": 88,
        "transactionCheckInterval": 1000,
        "transactionTimeOut": 1000,
        "transactionCheckMax": 15,
        "waitTimeMillsInSendQueue": 1000,
        "osPageCacheBusyTimeOutMills": 3000,
    }
    if not spec.is_4x:
        props["bindAddress"] = "127.0.0.1"
        # RECALL_MESSAGE is refused (NO_PERMISSION) unless enabled: BrokerConfig, 5.3.2+
        props["recallMessageEnable"] = "true"
        # a 5.x broker's TransactionMetricsFlushService spins on a core until its first flush
        # interval has passed (it waits only after a flush): 10 s at every start by default
        props["transactionMetricFlushInterval"] = 1000
        # the timer store's flush (the whole timer wheel, every second by default) is most of
        # an idle broker's CPU; only a machine crash, not a killed broker, would need it sooner
        props["timerFlushIntervalMs"] = 10000
        # 5.5.0's TransactionalOpBatchService takes the last write of an idle queue's context
        # as its next wake-up: from transactionOpBatchInterval (3 s) after the last commit or
        # rollback it busy-loops on a core until the next one. Written at once instead (a
        # context over transactionOpMsgMaxSize wakes it) and otherwise left asleep
        props["transactionOpMsgMaxSize"] = 1
        props["transactionOpBatchInterval"] = 2_000_000_000  # (an int of ms: 23 days)
    placement = spec.netns.get(info.name)
    if placement is not None:
        props.update(brokerIP1=placement.listen_ip, brokerIP2=placement.listen_ip)
        if placement.namesrv_ip:
            props["namesrvAddr"] = f"{placement.namesrv_ip}:{namesrv_port}"
        if not spec.is_4x:
            props["bindAddress"] = placement.listen_ip
    if spec.controller:
        props.update(_controller_properties(spec, namesrv_port))
    elif info.role == "slave" and spec.is_4x:
        # (a 5.x slave given haMasterAddress never connects - its HA client logs "connect to
        # master null" - so it takes the address from its NameServer registration instead)
        props["haMasterAddress"] = f"127.0.0.1:{master_ha_port}"
    if spec.trace:
        props["traceTopicEnable"] = "true"
    if spec.acl is not None:
        props.update(_acl_properties(spec, info, state_dir))
    props.update(spec.broker_config)
    return props


def _controller_properties(spec: ClusterSpec, namesrv_port: int) -> dict[str, object]:
    """Controller mode (apache/rocketmq docs/en/controller/deploy.md, quick-start
    broker-n0.conf): every node starts as a slave with no id and asks the controller."""
    return {
        "brokerId": -1,
        "brokerRole": "SLAVE",
        "enableControllerMode": "true",
        "controllerAddr": controller_addr(spec, namesrv_port),
        # a message is acknowledged once every SyncStateSet member has it (deploy.md:
        # "ensuring that the message is not lost"), so a promoted slave has every one
        "allAckInSyncStateSet": "true",
    }


def _acl_properties(
    spec: ClusterSpec, info: BrokerProcessInfo, state_dir: Path
) -> dict[str, object]:
    assert spec.acl is not None
    if spec.is_4x:
        return {"aclEnable": "true"}  # reads home/conf/plain_acl.yml (write_plain_acl_4x)
    access_key, secret_key = spec.acl
    provider = "org.apache.rocketmq.auth.authentication.provider"
    user = json.dumps({"username": access_key, "password": secret_key})
    inner = json.dumps({"accessKey": access_key, "secretKey": secret_key})
    return {
        "authenticationEnabled": "true",
        "authenticationProvider": f"{provider}.DefaultAuthenticationProvider",
        "authenticationMetadataProvider": f"{provider}.LocalAuthenticationMetadataProvider",
        "initAuthenticationUser": user,  # created as a super user on first start
        "innerClientAuthenticationCredentials": inner,  # the broker's own requests
        "authConfigPath": state_dir / "store" / (info.name + "-auth"),
    }


def write_plain_acl_4x(home: Path, access_key: str, secret_key: str) -> None:
    """ACL 1.0 (4.x): one admin account."""
    (home / "conf").mkdir(parents=True, exist_ok=True)
    (home / "conf" / "plain_acl.yml").write_text(
        "accounts:\n"
        f"  - accessKey: {json.dumps(access_key)}\n"
        f"    secretKey: {json.dumps(secret_key)}\n"
        "    admin: true\n"
        "    defaultTopicPerm: PUB|SUB\n"
        "    defaultGroupPerm: PUB|SUB\n"
    )


def jvm_argv(
    spec: ClusterSpec, info: BrokerProcessInfo, *, java: str, lib: Path, state_dir: Path
) -> list[str]:
    home = state_dir / "home"
    is_namesrv = info.role == "namesrv"
    heap = spec.namesrv_heap_mb if is_namesrv else spec.broker_heap_mb
    argv = [
        java,
        "-server",
        f"-Xms{heap}m",
        f"-Xmx{heap}m",
        "-XX:MaxDirectMemorySize=512m",
        "-XX:+UseSerialGC" if is_namesrv else "-XX:+UseG1GC",
        "-XX:-OmitStackTraceInFastThrow",
        "-Djava.net.preferIPv4Stack=true",
        f"-Duser.home={home}",
        f"-Drocketmq.home.dir={home}",
        # what the JVM writes to a temporary directory (the broker's self-signed TLS
        # certificate, native libraries unpacked from jars) stays in the cluster's own
        # directory and goes with it; no hsperfdata in /tmp either
        f"-Djava.io.tmpdir={state_dir / 'tmp'}",
        "-XX:-UsePerfData",
        *(["-XX:TieredStopAtLevel=1"] if spec.jit == "quick" else []),
        "--add-opens=java.base/java.lang=ALL-UNNAMED",
        "--add-opens=java.base/java.nio=ALL-UNNAMED",
        "--add-exports=java.base/sun.nio.ch=ALL-UNNAMED",
    ]
    if spec.is_4x:
        argv.append("--add-opens=java.base/jdk.internal.ref=ALL-UNNAMED")
    else:
        component = "namesrv" if is_namesrv else "broker"
        argv.append(f"-Drmq.logback.configurationFile=rmq.{component}.logback.xml")
    if not is_namesrv:
        argv += [f"-D{key}={value}" for key, value in spec.broker_jvm_properties.items()]
    argv += ["-cp", f"{lib}/*"]
    placement = spec.netns.get(info.name)
    if placement is not None:
        argv = ["ip", "netns", "exec", placement.netns, *argv]
    if is_namesrv:
        argv.append("org.apache.rocketmq.namesrv.NamesrvStartup")
    else:
        argv.append("org.apache.rocketmq.broker.BrokerStartup")
    argv += ["-c", str(state_dir / "conf" / f"{info.name}.conf")]
    return argv
