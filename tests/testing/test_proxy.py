"""The launcher's RocketMQ 5 Proxy: it starts in front of the session cluster, a message sent
through it is stored on the cluster's broker, and it leaves no process or file behind."""

from __future__ import annotations

import socket
from pathlib import Path

import anyio
import pytest

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.producer import Message, Producer, create_topic
from rocketmq_actors.producer.result import SendStatus
from rocketmq_actors.query import view_message
from rocketmq_actors.testing import jars
from rocketmq_actors.testing.cluster import LocalCluster
from rocketmq_actors.testing.jars import UnpublishedVersion, resolve_proxy_jars
from rocketmq_actors.testing.procs import pid_alive
from rocketmq_actors.testing.proxy import LocalProxy


@pytest.mark.parametrize("version", ["4.9.7", "latest"])
def test_there_is_no_proxy_before_5(tmp_path: Path, version: str) -> None:
    # refused before Maven runs: nothing is created in the cache
    with pytest.raises(UnpublishedVersion, match="has no Proxy"):
        resolve_proxy_jars(version, cache_dir=tmp_path)
    assert list(tmp_path.iterdir()) == []


async def _send_through(proxy_remoting: str, namesrv: str, topic: str) -> tuple[object, bytes]:
    async with ClientInstance(namesrv) as admin:
        await create_topic(admin, topic, queues=2)
        # the Proxy's remoting port answers route lookups with itself as the broker
        async with Producer(namesrv=proxy_remoting, group=f"{topic}_group") as producer:
            result = await producer.send(Message(topic=topic, body=b"through the proxy"))
        stored = await view_message(admin, result.offset_msg_id, topic=topic)
    return result.status, stored.body


@pytest.mark.integration
@pytest.mark.once
def test_a_proxy_fronts_the_cluster(rocketmq_cluster: LocalCluster, unique_topic: str) -> None:
    namesrv = rocketmq_cluster.namesrv_addr
    with LocalProxy(namesrv, version="5.3.3") as proxy:
        assert proxy.state_dir is not None
        state_dir = proxy.state_dir
        assert proxy._proc is not None
        pid = proxy._proc.pid
        with socket.create_connection(("127.0.0.1", proxy.grpc_port), timeout=5):
            pass  # the gRPC port of the official 5.x clients
        status, body = anyio.run(
            _send_through, f"127.0.0.1:{proxy.remoting_port}", namesrv, unique_topic
        )
    assert status is SendStatus.SEND_OK
    assert body == b"through the proxy"  # read back from the broker itself, not the Proxy
    assert not pid_alive(pid)
    assert not state_dir.exists()


def test_a_proxy_download_failure_names_the_proxy_not_the_servers(tmp_path: Path) -> None:
    log = tmp_path / "maven-proxy.log"
    log.write_text(
        "[ERROR] Failed: The following artifacts could not be resolved: "
        "org.apache.rocketmq:rocketmq-proxy:jar:5.9.9: Could not find artifact\n"
    )
    failure = str(jars._download_failure("5.9.9", 1, log, ("rocketmq-proxy",)))
    assert "rocketmq-proxy could not be resolved (resolved: none)" in failure
    assert "rocketmq-namesrv" not in failure
