"""ACL against a real broker that authenticates every request (5.x: ACL 2.0 authentication;
with ``--rocketmq-version 4.9.7``: ACL 1.0)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rocketmq_actors.cluster.options import ClientOptions
from rocketmq_actors.consumer.pull import PullConsumer, PullOptions
from rocketmq_actors.errors import AccessDenied, SendFailed
from rocketmq_actors.producer import Message, Producer
from rocketmq_actors.protocol.acl import AclCredentials
from rocketmq_actors.testing.cluster import ClusterSpec, LocalCluster

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ADMIN = ("rocketmq-actors-admin", "s3cret-for-tests")


@pytest.fixture(scope="module")
def acl_cluster(request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    """One broker authenticating every request, shared by this module's tests."""
    spec = ClusterSpec(version=request.config.getoption("--rocketmq-version"), acl=ADMIN)
    cluster = LocalCluster(spec)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop(graceful=False)  # its store is thrown away


async def test_correct_keys_send_and_consume(
    acl_cluster: LocalCluster, unique_topic: str, unique_group: str
) -> None:
    creds = AclCredentials(*ADMIN)
    async with Producer(
        namesrv=acl_cluster.namesrv_addr, client=ClientOptions(credentials=creds)
    ) as producer:
        sent = [await producer.send(Message(topic=unique_topic, body=b"%d" % i)) for i in range(5)]
        batch = await producer.send_batch(
            [Message(topic=unique_topic, body=b"b") for _ in range(3)]
        )
        future = await producer.submit(Message(topic=unique_topic, body=b"n"))
        await future
    assert len(sent) == 5 and len(batch) == 3
    async with PullConsumer(
        group=unique_group, topics=[unique_topic], namesrv=acl_cluster.namesrv_addr,
        options=PullOptions(auto_offset_reset="earliest"),
        client=ClientOptions(credentials=creds),
    ) as consumer:  # fmt: skip
        got: list[bytes] = []
        while len(got) < 9:
            batches = await consumer.getmany(timeout=10.0)
            assert batches, f"nothing more within 10 s after {len(got)} messages"
            for records in batches.values():
                got.extend(m.body for m in records)
        await consumer.commit()
    assert sorted(got) == sorted([b"%d" % i for i in range(5)] + [b"b"] * 3 + [b"n"])


async def test_wrong_secret_is_refused_with_a_clear_error(
    acl_cluster: LocalCluster, unique_topic: str
) -> None:
    creds = AclCredentials(ADMIN[0], "not-the-secret")
    async with Producer(
        namesrv=acl_cluster.namesrv_addr, client=ClientOptions(credentials=creds)
    ) as producer:
        with pytest.raises(SendFailed) as info:
            await producer.send(Message(topic=unique_topic, body=b"x"))
    assert isinstance(info.value.__cause__, AccessDenied)
    assert "signature" in str(info.value).lower()  # 5.x: "check signature failed"
    assert len(info.value.attempts) == 1  # the same keys would fail again: no retry
    assert not info.value.outcome_unknown and not info.value.retriable


async def test_unsigned_requests_are_refused(acl_cluster: LocalCluster, unique_topic: str) -> None:
    async with Producer(namesrv=acl_cluster.namesrv_addr) as producer:
        with pytest.raises(SendFailed) as info:
            await producer.send(Message(topic=unique_topic, body=b"x"))
    assert isinstance(info.value.__cause__, AccessDenied)
