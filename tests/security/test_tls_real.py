"""TLS against a real broker that refuses plaintext (``tls.server.mode=enforcing``, with the
self-signed certificate RocketMQ generates in its test mode)."""

from __future__ import annotations

import ssl
from collections.abc import Iterator

import pytest

from rocketmq_actors.cluster.options import ClientOptions
from rocketmq_actors.consumer.pull import PullConsumer, PullOptions
from rocketmq_actors.errors import ConnectionLost, NameServerUnavailable, SendFailed
from rocketmq_actors.producer import Message, Producer, ProducerOptions
from rocketmq_actors.testing.cluster import ClusterSpec, LocalCluster

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def tls_cluster(request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    spec = ClusterSpec(
        version=request.config.getoption("--rocketmq-version"),
        # the broker refuses plaintext; it reaches the NameServer over TLS itself
        broker_jvm_properties={"tls.server.mode": "enforcing", "tls.enable": "true"},
    )
    cluster = LocalCluster(spec)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop(graceful=False)


def _unverified() -> ssl.SSLContext:
    """What the Java client does by default: encrypt, do not check the certificate."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


async def test_send_and_consume_over_tls(
    tls_cluster: LocalCluster, unique_topic: str, unique_group: str
) -> None:
    async with Producer(
        namesrv=tls_cluster.namesrv_addr, client=ClientOptions(ssl_context=_unverified())
    ) as producer:
        for i in range(5):
            await producer.send(Message(topic=unique_topic, body=b"%d" % i))
        broker = producer.instance.pool.registry.lookup(tls_cluster.broker("broker-a").addr)
        assert broker is not None
        assert broker.statistics()["tls"] is True
    async with PullConsumer(
        group=unique_group, topics=[unique_topic], namesrv=tls_cluster.namesrv_addr,
        options=PullOptions(auto_offset_reset="earliest"),
        client=ClientOptions(ssl_context=_unverified()),
    ) as consumer:  # fmt: skip
        got: list[bytes] = []
        while len(got) < 5:
            batches = await consumer.getmany(timeout=10.0)
            assert batches, "nothing consumed within 10 s"
            for records in batches.values():
                got.extend(m.body for m in records)
    assert sorted(got) == [b"%d" % i for i in range(5)]


async def test_plaintext_is_refused_with_a_typed_error(
    tls_cluster: LocalCluster, unique_topic: str
) -> None:
    async with Producer(
        namesrv=tls_cluster.namesrv_addr, options=ProducerOptions(retry_times=0)
    ) as producer:
        with pytest.raises(SendFailed) as info:
            await producer.send(Message(topic=unique_topic, body=b"x"))
    assert isinstance(info.value.__cause__, ConnectionLost)


async def test_certificate_verification_failure_is_a_connect_error(
    tls_cluster: LocalCluster,
) -> None:
    """A verifying context (the Python default) refuses the self-signed certificate, and the
    error says so - at start, since the NameServer (TLS too) is the first to fail the check."""
    producer = Producer(
        namesrv=tls_cluster.namesrv_addr,
        client=ClientOptions(ssl_context=ssl.create_default_context()),
    )
    with pytest.raises(NameServerUnavailable) as info:
        await producer.start()
    assert "CERTIFICATE_VERIFY_FAILED" in str(info.value)
    assert not info.value.outcome_unknown  # nothing was sent
