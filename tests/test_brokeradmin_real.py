"""Consumer groups, broker settings, producer connections and write permission against the real
broker (``rocketmq_actors.brokeradmin``, re-exported by ``rocketmq_actors.admin``)."""

from __future__ import annotations

import pytest

from rocketmq_actors import admin
from rocketmq_actors.consumer.core.offsets import RemoteOffsetStore
from rocketmq_actors.errors import BrokerError, ConfigError
from rocketmq_actors.producer import Producer, create_topic
from rocketmq_actors.protocol.codes import ResponseCode

pytestmark = pytest.mark.integration


async def test_a_group_is_created_updated_and_deleted_on_every_master(
    rocketmq_namesrv: str, unique_group: str, request: pytest.FixtureRequest
) -> None:
    # (a 4.9 broker's SubscriptionGroupConfig has no consumeMessageOrderly: never stored)
    orderly = not str(request.config.getoption("--rocketmq-version")).startswith("4.")
    async with Producer(namesrv=rocketmq_namesrv, group=f"{unique_group}_admin") as client:
        instance = client.instance
        brokers = await admin.update_group(instance, unique_group, retry_max_times=3,
                                           consume_orderly=True)  # fmt: skip
        assert brokers == sorted(await admin.masters(instance))
        config = (await admin.group_list(instance))[unique_group]
        assert (config["retry_max_times"], config["consume_orderly"]) == (3, orderly)

        await admin.update_group(instance, unique_group, consume_broadcast_enable=False)
        config = (await admin.group_list(instance))[unique_group]
        assert not config["consume_broadcast_enable"]
        assert (config["retry_max_times"], config["consume_orderly"]) == (16, False)  # defaults

        assert await admin.delete_group(instance, unique_group, clean_offset=True) == brokers
        assert unique_group not in await admin.group_list(instance)


async def test_broker_settings_are_read_and_changed_at_runtime(rocketmq_namesrv: str) -> None:
    async with Producer(namesrv=rocketmq_namesrv, group="G_admin_config") as client:
        instance = client.instance
        addr = next(iter((await admin.masters(instance)).values()))
        config = await admin.broker_config(instance, addr)
        assert config["brokerName"] and config["listenPort"] == addr.rsplit(":", 1)[1]
        before = config["maxMessageSize"]
        changed = str(int(before) - 1)
        try:
            await admin.update_broker_config(instance, addr, {"maxMessageSize": changed})
            assert (await admin.broker_config(instance, addr))["maxMessageSize"] == changed
        finally:
            await admin.update_broker_config(instance, addr, {"maxMessageSize": before})
        assert (await admin.broker_config(instance, addr))["maxMessageSize"] == before
        with pytest.raises(ConfigError):
            await admin.update_broker_config(instance, addr, {"a=b": "c"})


async def test_a_producer_is_listed_once_its_heartbeat_reached_the_brokers(
    rocketmq_namesrv: str, unique_group: str, unique_topic: str
) -> None:
    async with Producer(namesrv=rocketmq_namesrv, group=f"{unique_group}_admin") as client:
        await create_topic(client.instance, unique_topic, queues=1)
        assert await admin.producer_connection(client.instance, unique_group) == ()
        async with Producer(namesrv=rocketmq_namesrv, group=unique_group,
                            topics=[unique_topic]) as producer:  # fmt: skip
            # (topics=: the brokers are heartbeated at start)
            found = await admin.producer_connection(client.instance, unique_group)
            assert [c.client_id for c in found] == [producer.instance.client_id]
            assert found[0].language and found[0].client_addr


async def test_write_permission_is_taken_and_given_back_in_the_routes(
    rocketmq_namesrv: str, unique_topic: str
) -> None:
    async with Producer(namesrv=rocketmq_namesrv, group="G_admin_perm") as client:
        instance = client.instance
        await create_topic(instance, unique_topic, queues=2)
        broker = next(iter(await admin.masters(instance)))
        try:
            wiped = await admin.wipe_write_perm(instance, broker)
            assert set(wiped) == set(instance.namesrv.addrs) and min(wiped.values()) >= 1
            route = await instance.routes.refresh(unique_topic)
            assert not route.publish_queues  # no queue of it may be written now
        finally:
            added = await admin.add_write_perm(instance, broker)
        assert min(added.values()) >= 1
        route = await instance.routes.refresh(unique_topic)
        assert len(route.publish_queues) == 2
        with pytest.raises(ConfigError):
            await admin.wipe_write_perm(instance, "")


async def test_bad_arguments_are_refused_before_any_io(rocketmq_namesrv: str) -> None:
    async with Producer(namesrv=rocketmq_namesrv, group="G_admin_refused") as client:
        with pytest.raises(ConfigError):
            await admin.update_group(client.instance, "bad group name")
        with pytest.raises(ConfigError):
            await admin.update_group(client.instance, "G_x", retry_queue_nums=-1)
        with pytest.raises(ConfigError):
            await admin.delete_group(client.instance, "")
        with pytest.raises(ConfigError):
            await admin.update_broker_config(client.instance, "127.0.0.1:1", {})


async def test_a_groups_offsets_are_cloned_to_another_group(
    rocketmq_namesrv: str, unique_group: str, unique_topic: str
) -> None:
    """mqadmin cloneGroupOffset: the new group starts where the old one is."""
    source, dest = f"{unique_group}_src", f"{unique_group}_dst"
    async with Producer(namesrv=rocketmq_namesrv, group=f"{unique_group}_admin") as client:
        instance = client.instance
        await create_topic(instance, unique_topic, queues=2)
        route = await instance.routes.refresh(unique_topic)
        queues = route.subscribe_queues
        for group in (source, dest):  # (a broker refuses offsets of a group it does not know)
            await admin.update_group(instance, group)
        committed = RemoteOffsetStore(instance, source)  # (as a member of the group commits)
        for queue, offset in zip(queues, (3, 5), strict=True):
            committed.update(queue, offset)
        await committed.persist(confirmed=True)
        brokers = await admin.clone_group_offset(instance, source, dest, unique_topic)
        assert brokers == sorted(route.brokers)
        stats = await admin.consume_stats(instance, dest, unique_topic)
        assert {q: o.consumer_offset for q, o in stats.offsets.items()} == dict(
            zip(queues, (3, 5), strict=True)
        )
        with pytest.raises(ConfigError):
            await admin.clone_group_offset(instance, source, "bad group!", unique_topic)


async def test_a_groups_request_mode_is_set_and_read_on_5x_and_refused_by_4x(
    rocketmq_namesrv: str, unique_group: str, unique_topic: str, request: pytest.FixtureRequest
) -> None:
    """mqadmin setConsumeMode: what a Java push consumer with setClientRebalance(false)
    follows. A 4.9 broker has no request modes: its refusal comes out typed."""
    async with Producer(namesrv=rocketmq_namesrv, group=f"{unique_group}_admin") as client:
        instance = client.instance
        if str(request.config.getoption("--rocketmq-version")).startswith("4."):
            with pytest.raises(BrokerError) as refused:
                await admin.set_message_request_mode(instance, unique_group, unique_topic, "POP")
            assert refused.value.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
            return
        await create_topic(instance, unique_topic, queues=2)  # (5.x: an unknown topic is refused)
        brokers = await admin.set_message_request_mode(
            instance, unique_group, unique_topic, "POP", pop_share_queue_num=2
        )
        assert brokers == sorted(await admin.masters(instance))
        modes = await admin.message_request_modes(instance)
        assert modes[unique_topic][unique_group] == {
            "mode": "POP", "pop_share_queue_num": 2, "brokers": brokers,
        }  # fmt: skip
        await admin.set_message_request_mode(instance, unique_group, unique_topic, "PULL")
        modes = await admin.message_request_modes(instance)
        assert modes[unique_topic][unique_group]["mode"] == "PULL"
        with pytest.raises(ConfigError):
            await admin.set_message_request_mode(instance, unique_group, unique_topic, "PUSH")  # type: ignore[arg-type]
