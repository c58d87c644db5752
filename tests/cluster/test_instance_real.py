"""ClientInstance against the real cluster: routes, heartbeats, broker death and return."""

from __future__ import annotations

import time
from collections.abc import Callable

import anyio
import pytest

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.errors import BrokerError, ConnectionLost
from rocketmq_actors.protocol.bodies import ConsumerData, SubscriptionData, decode_consumer_list
from rocketmq_actors.protocol.codes import RequestCode, ResponseCode
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.protocol.headers import (
    GetConsumerListByGroupRequestHeader,
    PullMessageRequestHeader,
)
from rocketmq_actors.protocol.messages import PullSysFlag
from rocketmq_actors.runtime.mailbox import Mailbox
from rocketmq_actors.testing.cluster import LocalCluster
from tests.slack import slack

pytestmark = pytest.mark.integration


async def _consumer_ids(inst: ClientInstance, addr: str, group: str) -> tuple[str, ...]:
    header = GetConsumerListByGroupRequestHeader(consumer_group=group)
    reply = await inst.request(
        addr, RemotingCommand.request(RequestCode.GET_CONSUMER_LIST_BY_GROUP, header.to_ext())
    )
    if reply.code != ResponseCode.SUCCESS:
        raise BrokerError(addr, reply.code, reply.remark)
    return decode_consumer_list(reply.body)


def _consumer(group: str, topic: str) -> Callable[[], ConsumerData]:
    return lambda: ConsumerData(
        group=group,
        consume_type="CONSUME_ACTIVELY",
        message_model="CLUSTERING",
        consume_from_where="CONSUME_FROM_LAST_OFFSET",
        subscriptions=(SubscriptionData(topic=topic, sub_version=int(time.time() * 1000)),),
    )


async def test_routes_and_heartbeat_registration(
    rocketmq_cluster: LocalCluster, unique_group: str
) -> None:
    async with ClientInstance(rocketmq_cluster.namesrv_addr) as inst:
        route = await inst.routes.get("TBW102")
        broker = rocketmq_cluster.broker("broker-a").addr
        assert route.master_addr("broker-a") == broker
        assert len(route.publish_queues) >= 4
        inst.register_consumer(unique_group, Mailbox("c"), _consumer(unique_group, "TBW102"))
        assert await inst.heartbeat.beat() == {broker: None}
        assert await _consumer_ids(inst, broker, unique_group) == (inst.client_id,)
        await inst.unregister_consumer(unique_group)
        with pytest.raises(BrokerError):  # "no consumer for this group"
            await _consumer_ids(inst, broker, unique_group)


async def test_two_instances_are_two_members(
    rocketmq_cluster: LocalCluster, unique_group: str
) -> None:
    async with (
        ClientInstance(rocketmq_cluster.namesrv_addr) as a,
        ClientInstance(rocketmq_cluster.namesrv_addr) as b,
    ):
        assert a.client_id != b.client_id  # unique per instance, not just ip@pid
        for inst in (a, b):
            await inst.routes.get("TBW102")
            inst.register_consumer(unique_group, Mailbox("c"), _consumer(unique_group, "TBW102"))
            await inst.heartbeat.beat()
        ids = await _consumer_ids(a, rocketmq_cluster.broker("broker-a").addr, unique_group)
        assert sorted(ids) == sorted([a.client_id, b.client_id])


async def test_two_masters_route(rocketmq_two_masters: LocalCluster) -> None:
    cluster = rocketmq_two_masters
    async with ClientInstance(cluster.namesrv_addr) as inst:
        route = await inst.routes.get("TBW102")
        assert set(route.brokers) == {"broker-a", "broker-b"}
        assert {q.broker_name for q in route.publish_queues} == {"broker-a", "broker-b"}
        assert inst.routes.broker_addrs() == {b.addr for b in cluster.brokers}


@pytest.mark.once  # the client's reconnect: the same whatever the broker's version
async def test_broker_killed_during_requests_then_restarted(
    rocketmq_two_masters: LocalCluster, unique_topic: str
) -> None:
    cluster = rocketmq_two_masters
    broker = cluster.broker("broker-a").addr
    baseline = len(anyio.get_running_tasks())
    async with ClientInstance(cluster.namesrv_addr) as inst:
        await inst.routes.get("TBW102")
        # long polls on an empty queue stay pending at the broker for 15 s
        pull = PullMessageRequestHeader(
            consumer_group="G_kill", topic="TBW102", queue_id=0, queue_offset=0, max_msg_nums=1,
            sys_flag=PullSysFlag.build(commit_offset=False, suspend=True, subscription=True),
            suspend_timeout_millis=15000, subscription="*", expression_type="TAG",
        )  # fmt: skip
        errors: list[tuple[ConnectionLost, float]] = []
        killed_at = 0.0

        async def long_poll() -> None:
            cmd = RemotingCommand.request(RequestCode.PULL_MESSAGE, pull.to_ext())
            try:
                await inst.request(broker, cmd, timeout=30)
            except ConnectionLost as exc:
                errors.append((exc, time.monotonic() - killed_at))

        async with anyio.create_task_group() as tg:
            for _ in range(8):
                tg.start_soon(long_poll)
            conn = await inst.pool.get(broker)
            with anyio.fail_after(10):
                while conn.pending < 8:
                    await anyio.wait_all_tasks_blocked()
            killed_at = time.monotonic()
            await anyio.to_thread.run_sync(cluster.kill_broker, "broker-a")
        assert len(errors) == 8
        assert max(delay for _, delay in errors) < 0.5 + slack(killed_at)  # at once, not at 30 s
        assert all(exc.outcome_unknown for exc, _ in errors)

        await anyio.to_thread.run_sync(cluster.restart_broker, "broker-a")
        with anyio.fail_after(30):
            reply = await inst.request(
                broker, RemotingCommand.request(RequestCode.GET_MAX_OFFSET,
                                                {"topic": "TBW102", "queueId": "0"}),
            )  # fmt: skip
        assert reply.code == ResponseCode.SUCCESS
    assert len(anyio.get_running_tasks()) == baseline
