"""Cluster administration, as Java's ``MQAdminExt`` (``mqadmin``) does it, over a started
:class:`~rocketmq_actors.cluster.instance.ClientInstance`:

* :func:`cluster_list` - GET_BROKER_CLUSTER_INFO (106) plus each broker's runtime info (28);
* :func:`create_topic` / :func:`delete_topic` - UPDATE_AND_CREATE_TOPIC (17) on every master;
  DELETE_TOPIC_IN_BROKER (215) on every master, then DELETE_TOPIC_IN_NAMESRV (216) on every
  NameServer (the order of ``DeleteTopicSubCommand``);
* :func:`topic_config` / :func:`update_topic` - GET_TOPIC_CONFIG (351; a 4.9 broker lacks it:
  GET_ALL_TOPIC_CONFIG, 21) then UPDATE_AND_CREATE_TOPIC with only the given settings changed;
* :func:`topic_status` - GET_TOPIC_STATS_INFO (202) on every master of the topic;
* :func:`group_list` - GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201) on every master;
* :func:`consumer_connection` / :func:`consume_stats` - GET_CONSUMER_CONNECTION_LIST (203) and
  GET_CONSUME_STATS (208) on every master, merged;
* :func:`reset_offset` - INVOKE_BROKER_TO_RESET_OFFSET (222). A 5.x broker (its default
  ``useServerSideResetOffset``) stores the new offsets itself and tells the online members,
  online or not; a 4.x broker only tells online members and answers CONSUMER_NOT_ONLINE for
  an offline group, and then, as ``ResetOffsetByTimeCommand`` does (Java's
  ``resetOffsetByTimestampOld``), each queue the group has an offset for is written with
  UPDATE_CONSUMER_OFFSET (15).

Finding messages (QUERY_MESSAGE 12, VIEW_MESSAGE_BY_ID 33, either id form decoded) lives in
:mod:`rocketmq_actors.query`, consumer groups' settings, broker settings, producer
connections and write permission in :mod:`rocketmq_actors.brokeradmin`, ACL 2.0 users and
ACLs (AUTH_* 3001-3010, 5.3+) in :mod:`rocketmq_actors.authadmin`, and the 5.x controller's
metadata, sync state and master election in :mod:`rocketmq_actors.controlleradmin`; their
functions are re-exported here, beside mqadmin's others.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from rocketmq_actors.adminbase import NoMaster, call, masters, topic_masters
from rocketmq_actors.authadmin import (
    AuthRefused,
    create_acl,
    create_user,
    delete_acl,
    delete_user,
    get_acl,
    get_user,
    list_acls,
    list_users,
    update_acl,
    update_user,
)
from rocketmq_actors.brokeradmin import (
    add_write_perm,
    broker_config,
    clone_group_offset,
    delete_group,
    message_request_modes,
    producer_connection,
    set_message_request_mode,
    update_broker_config,
    update_group,
    wipe_write_perm,
)
from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.consumer.core.brokercalls import max_offset, min_offset, offset_for_time
from rocketmq_actors.controlleradmin import (
    ControllerRefused,
    controller_metadata,
    elect_master,
    sync_state_data,
)
from rocketmq_actors.errors import BrokerError, RocketMQError, TopicNotFound
from rocketmq_actors.protocol.admin_bodies import (
    ConsumerConnection,
    ConsumeStats,
    OffsetWrapper,
    TopicConfig,
    TopicOffset,
    decode_all_topic_configs,
    decode_kv_table,
    decode_subscription_groups,
    decode_topic_stats,
)
from rocketmq_actors.protocol.bodies import ClusterInfo, MessageQueue, decode_offset_table
from rocketmq_actors.protocol.codes import RequestCode, ResponseCode
from rocketmq_actors.protocol.headers import (
    CreateTopicRequestHeader,
    DeleteTopicFromNamesrvRequestHeader,
    DeleteTopicRequestHeader,
    GetConsumerConnectionListRequestHeader,
    GetConsumeStatsRequestHeader,
    GetTopicStatsInfoRequestHeader,
    ResetOffsetRequestHeader,
    UpdateConsumerOffsetRequestHeader,
)
from rocketmq_actors.query import (
    decode_message_id,
    find_message,
    query_by_unique_key,
    query_messages,
    view_message,
)

__all__ = [
    "AuthRefused",
    "ControllerRefused",
    "GroupNotFound",
    "NoMaster",
    "ResetResult",
    "TopicUpdateRefused",
    "add_write_perm",
    "broker_config",
    "broker_runtime_info",
    "clone_group_offset",
    "cluster_list",
    "consume_stats",
    "consumer_connection",
    "controller_metadata",
    "create_acl",
    "create_topic",
    "create_user",
    "decode_message_id",
    "delete_acl",
    "delete_group",
    "delete_topic",
    "delete_user",
    "elect_master",
    "find_message",
    "get_acl",
    "get_user",
    "group_list",
    "list_acls",
    "list_users",
    "masters",
    "message_request_modes",
    "producer_connection",
    "query_by_unique_key",
    "query_messages",
    "reset_offset",
    "set_message_request_mode",
    "sync_state_data",
    "topic_config",
    "topic_status",
    "update_acl",
    "update_broker_config",
    "update_group",
    "update_topic",
    "update_user",
    "view_message",
    "wipe_write_perm",
]

#: a queue's permission bits (Java's PermName): 6 = read + write
PERM_READ_WRITE = 6
#: INVOKE_BROKER_TO_RESET_OFFSET's timestamp for "the end of each queue" (mqadmin's "now")
LATEST = -1

Progress = Callable[[int], object]


class TopicUpdateRefused(RocketMQError):
    """An update that would make stored messages unreadable (fewer read queues), refused
    without ``force``."""


class GroupNotFound(RocketMQError):
    """No broker knows the consumer group: no config, no offsets, no online member."""

    def __init__(self, group: str) -> None:
        super().__init__(f"consumer group {group!r} not found on any broker")
        self.group = group


# ---- brokers ------------------------------------------------------------------------------


async def broker_runtime_info(instance: ClientInstance, addr: str) -> dict[str, str]:
    """The broker's ``KVTable`` of runtime figures (what ``mqadmin brokerStatus`` prints)."""
    reply = await call(instance, addr, RequestCode.GET_BROKER_RUNTIME_INFO)
    return decode_kv_table(reply.body)


def _first(value: str | None) -> float | None:
    """``"12.5 10.0 9.9"`` (the last 10 s, 1 min, 10 min rates) -> 12.5; None while the
    broker has sampled less than 10 s (StoreStatsService then writes blanks)."""
    try:
        return float((value or "").split()[0])
    except (IndexError, ValueError):
        return None


async def cluster_list(instance: ClientInstance) -> list[dict[str, Any]]:
    """One row per broker node (masters and slaves), as ``mqadmin clusterList``."""
    info: ClusterInfo = await instance.namesrv.cluster_info()
    rows = []
    for cluster, names in sorted(info.clusters.items()):
        for name in sorted(names):
            data = info.brokers.get(name)
            for broker_id, addr in sorted((data.broker_addrs if data else {}).items()):
                runtime: dict[str, str] = {}
                error, reachable = None, True
                try:
                    runtime = await broker_runtime_info(instance, addr)
                except BrokerError as exc:
                    # it answered, with an error: a broker in its first seconds fails this
                    # request (StoreStatsService has no sample yet: NoSuchElementException)
                    error = str(exc)
                except RocketMQError as exc:  # a listed broker that does not answer
                    error, reachable = str(exc), False
                rows.append({
                    "cluster": cluster, "broker": name, "id": broker_id, "addr": addr,
                    "version": runtime.get("brokerVersionDesc", ""),
                    "in_tps": _first(runtime.get("putTps")),
                    # 5.x spells it getTransferredTps, 4.9 getTransferedTps
                    "out_tps": _first(runtime.get("getTransferredTps",
                                                  runtime.get("getTransferedTps"))),
                    "reachable": reachable, "error": error,
                })  # fmt: skip
    return rows


# ---- topics -------------------------------------------------------------------------------


async def create_topic(
    instance: ClientInstance, topic: str, *, read_queues: int, write_queues: int,
    perm: int = PERM_READ_WRITE, order: bool = False, cluster: str | None = None,
    progress: Progress | None = None,
) -> list[str]:  # fmt: skip
    """Create or update ``topic`` on every master of ``cluster``; returns the broker names."""
    header = CreateTopicRequestHeader(
        topic=topic, read_queue_nums=read_queues, write_queue_nums=write_queues, perm=perm,
        order=order,
    )  # fmt: skip
    done = []
    for name, addr in (await masters(instance, cluster)).items():
        await call(instance, addr, RequestCode.UPDATE_AND_CREATE_TOPIC, header.to_ext())
        done.append(name)
        if progress:
            progress(1)
    if instance.routes.cached(topic) is not None:
        await instance.routes.refresh(topic)
    return done


async def topic_config(instance: ClientInstance, addr: str, topic: str) -> TopicConfig | None:
    """The broker's config of ``topic``; None when the broker does not have it."""
    header = {"topic": topic}
    reply = await call(
        instance, addr, RequestCode.GET_TOPIC_CONFIG, header,
        accept=(ResponseCode.TOPIC_NOT_EXIST, ResponseCode.REQUEST_CODE_NOT_SUPPORTED),
    )  # fmt: skip
    if reply.code == ResponseCode.SUCCESS:
        return TopicConfig.decode(reply.body)
    if reply.code == ResponseCode.TOPIC_NOT_EXIST:
        return None
    # a 4.x broker has no GET_TOPIC_CONFIG: its whole table (what a slave syncs) holds it
    reply = await call(instance, addr, RequestCode.GET_ALL_TOPIC_CONFIG)
    return decode_all_topic_configs(reply.body).get(topic)


def _refusal(topic: str, broker: str, old: TopicConfig, new: TopicConfig) -> str | None:
    if new.read_queues < old.read_queues:
        return (
            f"topic {topic!r} on {broker}: {old.read_queues} read queues -> {new.read_queues} "
            f"would leave the messages of queues {new.read_queues}-{old.read_queues - 1} "
            "unreadable; shrink the write queues first, the read queues once consumers have "
            "caught up, or pass --force"
        )
    changed = (new.read_queues, new.write_queues) != (old.read_queues, old.write_queues)
    if changed and new.write_queues > new.read_queues:
        return (
            f"topic {topic!r} on {broker}: {new.write_queues} write queues but "
            f"{new.read_queues} read queues: messages sent to queues {new.read_queues}-"
            f"{new.write_queues - 1} could not be read; raise the read queues too, or pass --force"
        )
    return None


async def update_topic(
    instance: ClientInstance, topic: str, *, read_queues: int | None = None,
    write_queues: int | None = None, perm: int | None = None, order: bool | None = None,
    force: bool = False, cluster: str | None = None, progress: Progress | None = None,
) -> dict[str, tuple[TopicConfig, TopicConfig]]:  # fmt: skip
    """Change only the given settings of ``topic`` on every master of ``cluster`` that has
    it, each from that broker's current config (None keeps a setting). Without ``force``,
    :class:`TopicUpdateRefused` - before any broker is changed - for fewer read queues than
    now, or more write queues than read queues. Returns broker name -> (before, after)."""
    plans: dict[str, tuple[str, TopicConfig, TopicConfig]] = {}
    for name, addr in (await masters(instance, cluster)).items():
        old = await topic_config(instance, addr, topic)
        if old is None:
            continue  # an update does not spread a topic to more brokers: create does
        new = attrs.evolve(
            old, read_queues=read_queues or old.read_queues,
            write_queues=write_queues or old.write_queues,
            perm=old.perm if perm is None else perm, order=old.order if order is None else order,
        )  # fmt: skip
        refusal = None if force else _refusal(topic, name, old, new)
        if refusal is not None:
            raise TopicUpdateRefused(refusal)
        plans[name] = (addr, old, new)
    if not plans:
        raise TopicNotFound(topic)
    for addr, _, new in plans.values():
        header = CreateTopicRequestHeader(
            topic=topic, read_queue_nums=new.read_queues, write_queue_nums=new.write_queues,
            perm=new.perm, order=new.order, topic_sys_flag=new.topic_sys_flag,
            topic_filter_type=new.topic_filter_type,
        )  # fmt: skip
        await call(instance, addr, RequestCode.UPDATE_AND_CREATE_TOPIC, header.to_ext())
        if progress:
            progress(1)
    if instance.routes.cached(topic) is not None:
        await instance.routes.refresh(topic)
    return {name: (old, new) for name, (_, old, new) in plans.items()}


async def delete_topic(
    instance: ClientInstance, topic: str, *, cluster: str | None = None,
    progress: Progress | None = None,
) -> dict[str, list[str]]:  # fmt: skip
    """Delete ``topic`` from every master of ``cluster``, then from every NameServer."""
    brokers = []
    header = DeleteTopicRequestHeader(topic=topic)
    for name, addr in (await masters(instance, cluster)).items():
        await call(instance, addr, RequestCode.DELETE_TOPIC_IN_BROKER, header.to_ext())
        brokers.append(name)
        if progress:
            progress(1)
    ns_header = DeleteTopicFromNamesrvRequestHeader(topic=topic, cluster_name=cluster)
    namesrvs = []
    for addr in instance.namesrv.addrs:
        await call(instance, addr, RequestCode.DELETE_TOPIC_IN_NAMESRV, ns_header.to_ext())
        namesrvs.append(addr)
    return {"brokers": brokers, "namesrvs": namesrvs}


async def topic_status(instance: ClientInstance, topic: str) -> dict[MessageQueue, TopicOffset]:
    """Min/max offset and last update of every queue of ``topic`` (``mqadmin topicStatus``);
    :class:`~rocketmq_actors.errors.TopicNotFound` for a topic the NameServer does not know."""
    header = GetTopicStatsInfoRequestHeader(topic=topic)
    out: dict[MessageQueue, TopicOffset] = {}
    for addr in (await topic_masters(instance, topic)).values():
        reply = await call(instance, addr, RequestCode.GET_TOPIC_STATS_INFO, header.to_ext())
        out.update(decode_topic_stats(reply.body))
    return dict(sorted(out.items()))


# ---- groups -------------------------------------------------------------------------------


async def group_list(instance: ClientInstance) -> dict[str, dict[str, Any]]:
    """Every subscription group any master knows: name -> config fields and ``brokers``."""
    out: dict[str, dict[str, Any]] = {}
    for name, addr in (await masters(instance)).items():
        reply = await call(instance, addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        for group, config in decode_subscription_groups(reply.body).items():
            row = out.setdefault(group, {**config, "brokers": []})
            row["brokers"].append(name)
    return dict(sorted(out.items()))


async def consumer_connection(instance: ClientInstance, group: str) -> ConsumerConnection | None:
    """The group's online clients and subscriptions (merged over every master); None when no
    member is online (the broker's CONSUMER_NOT_ONLINE)."""
    header = GetConsumerConnectionListRequestHeader(consumer_group=group)
    merged: ConsumerConnection | None = None
    for addr in (await masters(instance)).values():
        reply = await call(
            instance, addr, RequestCode.GET_CONSUMER_CONNECTION_LIST, header.to_ext(),
            accept=(ResponseCode.CONSUMER_NOT_ONLINE,),
        )  # fmt: skip
        if reply.code != ResponseCode.SUCCESS:
            continue
        found = ConsumerConnection.decode(reply.body)
        if merged is None:
            merged = found
        else:
            conns = {c.client_id: c for c in (*merged.connections, *found.connections)}
            merged = attrs.evolve(
                merged, connections=tuple(conns[k] for k in sorted(conns)),
                subscriptions={**merged.subscriptions, **found.subscriptions},
            )  # fmt: skip
    return merged


async def consume_stats(
    instance: ClientInstance, group: str, topic: str | None = None
) -> ConsumeStats:
    """Broker offset, committed offset and lag per queue, of ``topic`` or of every topic the
    group has offsets for (``mqadmin consumerProgress``), merged over every master."""
    header = GetConsumeStatsRequestHeader(consumer_group=group, topic=topic)
    offsets: dict[MessageQueue, OffsetWrapper] = {}
    tps = 0.0
    for addr in (await masters(instance)).values():
        reply = await call(
            instance, addr, RequestCode.GET_CONSUME_STATS, header.to_ext(),
            accept=(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, ResponseCode.TOPIC_NOT_EXIST),
        )  # fmt: skip
        if reply.code == ResponseCode.SUCCESS:
            stats = ConsumeStats.decode(reply.body)
            offsets.update(stats.offsets)
            tps += stats.consume_tps
    return ConsumeStats(offsets=dict(sorted(offsets.items())), consume_tps=tps)


@attrs.frozen(kw_only=True)
class ResetResult:
    offsets: dict[MessageQueue, int]
    #: True: the broker did it (5.x: stored and told the members; 4.x: told the online
    #: members, who commit); False: it answered CONSUMER_NOT_ONLINE and the offsets were
    #: written here with UPDATE_CONSUMER_OFFSET
    by_broker: bool


async def _target(instance: ClientInstance, queue: MessageQueue, timestamp_ms: int) -> int:
    if timestamp_ms == LATEST:
        return await max_offset(instance, queue)
    if timestamp_ms == 0:
        return await min_offset(instance, queue)
    return await offset_for_time(instance, queue, timestamp_ms)


async def reset_offset(
    instance: ClientInstance, topic: str, group: str, timestamp_ms: int, *, force: bool = True,
    progress: Progress | None = None,
) -> ResetResult:  # fmt: skip
    """Move ``group`` on ``topic`` to the first message stored at or after ``timestamp_ms``
    (0: the oldest kept; :data:`LATEST`: the end). Without ``force`` an offset only moves
    back. See the module docstring for who stores the offsets; an offline group on a 4.x
    broker has them written for the queues it has offsets on."""
    header = ResetOffsetRequestHeader(
        topic=topic, group=group, timestamp=timestamp_ms, is_force=force
    )
    offsets: dict[MessageQueue, int] = {}
    offline = []
    for addr in (await topic_masters(instance, topic)).values():
        reply = await call(
            instance, addr, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, header.to_ext(),
            accept=(ResponseCode.CONSUMER_NOT_ONLINE,),
        )  # fmt: skip
        if reply.code == ResponseCode.SUCCESS:
            offsets.update(decode_offset_table(reply.body))
        else:
            offline.append(addr)
        if progress:
            progress(1)
    for addr in offline:
        offsets.update(
            await _reset_offline(
                instance, addr, topic, group, timestamp_ms=timestamp_ms, force=force
            )
        )
    if not offsets and offline:
        raise GroupNotFound(group)
    return ResetResult(offsets=dict(sorted(offsets.items())), by_broker=not offline)


async def _reset_offline(
    instance: ClientInstance, addr: str, topic: str, group: str, *, timestamp_ms: int,
    force: bool,
) -> dict[MessageQueue, int]:  # fmt: skip
    header = GetConsumeStatsRequestHeader(consumer_group=group, topic=topic)
    reply = await call(
        instance, addr, RequestCode.GET_CONSUME_STATS, header.to_ext(),
        accept=(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,),
    )  # fmt: skip
    if reply.code != ResponseCode.SUCCESS:
        return {}
    done = {}
    for queue, wrapper in ConsumeStats.decode(reply.body).offsets.items():
        if queue.topic != topic:
            continue
        target = await _target(instance, queue, timestamp_ms)
        if not force and target > wrapper.consumer_offset:
            target = wrapper.consumer_offset  # as Java's rollback: only ever move back
        update = UpdateConsumerOffsetRequestHeader(
            consumer_group=group, topic=topic, queue_id=queue.queue_id, commit_offset=target,
            broker_name=queue.broker_name,
        )  # fmt: skip
        await call(instance, addr, RequestCode.UPDATE_CONSUMER_OFFSET, update.to_ext())
        done[queue] = target
    return done
