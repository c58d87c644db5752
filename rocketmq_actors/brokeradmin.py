"""Consumer groups, broker settings, producers and write permission, as ``mqadmin`` manages
them (re-exported by :mod:`rocketmq_actors.admin`):

* :func:`update_group` / :func:`delete_group` - UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200) and
  DELETE_SUBSCRIPTIONGROUP (207) on every master (``updateSubGroup``, ``deleteSubGroup``);
* :func:`clone_group_offset` - CLONE_GROUP_OFFSET (314) on every master of a topic
  (``cloneGroupOffset``);
* :func:`set_message_request_mode` / :func:`message_request_modes` - SET_MESSAGE_REQUEST_MODE
  (401) and GET_ALL_MESSAGE_REQUEST_MODE (402) on every master, 5.x only (``setConsumeMode``);
* :func:`broker_config` / :func:`update_broker_config` - GET_BROKER_CONFIG (26) and
  UPDATE_BROKER_CONFIG (25) (``getBrokerConfig``, ``updateBrokerConfig``);
* :func:`producer_connection` - GET_PRODUCER_CONNECTION_LIST (204) on every master
  (``producerConnection``);
* :func:`wipe_write_perm` / :func:`add_write_perm` - WIPE_WRITE_PERM_OF_BROKER (205) and
  ADD_WRITE_PERM_OF_BROKER (327) on every NameServer (``wipeWritePerm``, ``addWritePerm``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from rocketmq_actors.adminbase import NoMaster, call, masters, on_each, topic_masters
from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.errors import ConfigError, broker_error
from rocketmq_actors.names import validate_group, validate_topic
from rocketmq_actors.protocol.admin_bodies import (
    ClientConnection,
    decode_message_request_modes,
    decode_producer_connections,
    decode_properties,
    encode_message_request_mode,
    encode_properties_text,
    encode_subscription_group,
)
from rocketmq_actors.protocol.codes import RequestCode, ResponseCode
from rocketmq_actors.protocol.headers import (
    BrokerNameRequestHeader,
    CloneGroupOffsetRequestHeader,
    GroupRequestHeader,
    ProducerGroupRequestHeader,
)
from rocketmq_actors.runtime.checks import check_int

__all__ = [
    "add_write_perm",
    "broker_config",
    "clone_group_offset",
    "delete_group",
    "message_request_modes",
    "producer_connection",
    "set_message_request_mode",
    "update_broker_config",
    "update_group",
    "wipe_write_perm",
]


async def update_group(
    instance: ClientInstance,
    group: str,
    *,
    cluster: str | None = None,
    consume_enable: bool = True,
    consume_broadcast_enable: bool = True,
    consume_orderly: bool = False,
    retry_queue_nums: int = 1,
    retry_max_times: int = 16,
    consume_from_min_enable: bool = True,
) -> list[str]:
    """Create consumer ``group`` on every master of ``cluster`` (every cluster when None), or
    set its settings there (each given, or Java's default, as ``mqadmin updateSubGroup``
    does); the broker names that now have it. ``consume_orderly`` is stored by 5.x brokers
    only (a 4.9 broker's group settings have no such field)."""
    validate_group(group)
    check_int("retry_queue_nums", retry_queue_nums, minimum=0)
    check_int("retry_max_times", retry_max_times, minimum=-1)
    body = encode_subscription_group(group, {
        "consumeEnable": consume_enable, "consumeBroadcastEnable": consume_broadcast_enable,
        "consumeMessageOrderly": consume_orderly, "retryQueueNums": retry_queue_nums,
        "retryMaxTimes": retry_max_times, "consumeFromMinEnable": consume_from_min_enable,
    })  # fmt: skip
    return await _on_masters(instance, cluster, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
                             body=body)  # fmt: skip


async def delete_group(
    instance: ClientInstance, group: str, *, cluster: str | None = None, clean_offset: bool = False
) -> list[str]:
    """Delete consumer ``group``'s settings from every master of ``cluster`` (with
    ``clean_offset``, its committed offsets too); the broker names it was deleted from."""
    validate_group(group)
    header = GroupRequestHeader(group_name=group, clean_offset=clean_offset)
    return await _on_masters(instance, cluster, RequestCode.DELETE_SUBSCRIPTIONGROUP,
                             header.to_ext())  # fmt: skip


async def clone_group_offset(
    instance: ClientInstance, source: str, dest: str, topic: str, *, offline: bool = False
) -> list[str]:
    """Copy consumer group ``source``'s committed offsets of ``topic`` to group ``dest`` on
    every master of the topic (``mqadmin cloneGroupOffset``): ``dest`` then starts where
    ``source`` is. Unless ``offline``, a broker skips the copy while ``source`` has online
    members that do not subscribe to ``topic``. The broker names asked."""
    validate_group(source)
    validate_group(dest)
    validate_topic(topic)
    header = CloneGroupOffsetRequestHeader(src_group=source, dest_group=dest, topic=topic,
                                           offline=offline)  # fmt: skip
    found = await topic_masters(instance, topic)
    if not found:
        raise NoMaster(f"no broker of topic {topic!r} has a master")
    return sorted(await on_each(instance, found, RequestCode.CLONE_GROUP_OFFSET, header.to_ext()))


async def set_message_request_mode(
    instance: ClientInstance, group: str, topic: str, mode: Literal["PULL", "POP"], *,
    pop_share_queue_num: int = 0, cluster: str | None = None,
) -> list[str]:  # fmt: skip
    """Tell every master of ``cluster`` how consumer ``group`` is to read ``topic``: ``PULL``
    or ``POP`` (``mqadmin setConsumeMode``; ``pop_share_queue_num``: in POP mode, how many
    members after each one share its queues). The Java push consumer follows it with
    ``setClientRebalance(false)``; ours keeps what its code chose (``PushConsumer`` pulls,
    ``PopConsumer`` pops). 5.x brokers only: a 4.9 broker answers REQUEST_CODE_NOT_SUPPORTED
    (its error). The broker names told."""
    validate_group(group)
    validate_topic(topic)
    if mode not in ("PULL", "POP"):
        raise ConfigError(f"mode must be PULL or POP, not {mode!r}")
    check_int("pop_share_queue_num", pop_share_queue_num, minimum=0)
    body = encode_message_request_mode(topic, group, mode, pop_share_queue_num)
    return await _on_masters(instance, cluster, RequestCode.SET_MESSAGE_REQUEST_MODE, body=body)


async def message_request_modes(
    instance: ClientInstance, *, cluster: str | None = None
) -> dict[str, dict[str, dict[str, Any]]]:
    """What :func:`set_message_request_mode` set, merged over every master of ``cluster``:
    topic -> group -> ``{"mode", "pop_share_queue_num", "brokers"}``."""
    merged: dict[str, dict[str, dict[str, Any]]] = {}
    for name, addr in (await masters(instance, cluster)).items():
        reply = await call(instance, addr, RequestCode.GET_ALL_MESSAGE_REQUEST_MODE)
        for topic, groups in decode_message_request_modes(reply.body).items():
            for group, entry in groups.items():
                row = merged.setdefault(topic, {}).setdefault(group, {**entry, "brokers": []})
                row["brokers"].append(name)
    return merged


async def _on_masters(
    instance: ClientInstance, cluster: str | None, code: int, ext: dict[str, str] | None = None,
    *, body: bytes = b"",
) -> list[str]:  # fmt: skip
    """One request to every master of ``cluster`` (every cluster when None), each answered
    SUCCESS; the broker names asked."""
    return await on_each(instance, await masters(instance, cluster), code, ext, body=body)


async def broker_config(instance: ClientInstance, addr: str) -> dict[str, str]:
    """Every setting of the broker at ``addr``, as it runs (``mqadmin getBrokerConfig``)."""
    reply = await call(instance, addr, RequestCode.GET_BROKER_CONFIG)
    return decode_properties(reply.body)


async def update_broker_config(
    instance: ClientInstance, addr: str, settings: Mapping[str, str]
) -> None:
    """Change settings of the running broker at ``addr`` (``mqadmin updateBrokerConfig``); the
    broker persists them. One it may not change at runtime is refused (its error)."""
    if not settings:
        raise ConfigError("no setting to update")
    for key, value in settings.items():
        if not (isinstance(key, str) and isinstance(value, str)) or not key or "=" in key:
            raise ConfigError(f"settings map names to text values: {key!r}: {value!r}")
        if "\n" in key or "\n" in value:
            raise ConfigError(f"a setting is one line: {key!r}")
    body = encode_properties_text(settings)
    await call(instance, addr, RequestCode.UPDATE_BROKER_CONFIG, body=body)


async def producer_connection(
    instance: ClientInstance, group: str, *, cluster: str | None = None
) -> tuple[ClientConnection, ...]:
    """The clients of producer ``group`` online on any master (``mqadmin producerConnection``;
    a broker knows a producer once its heartbeat reached it), by client id."""
    header = ProducerGroupRequestHeader(producer_group=group)
    found: dict[str, ClientConnection] = {}
    for addr in (await masters(instance, cluster)).values():
        reply = await call(instance, addr, RequestCode.GET_PRODUCER_CONNECTION_LIST,
                           header.to_ext(), accept=(ResponseCode.SYSTEM_ERROR,))  # fmt: skip
        if reply.code == ResponseCode.SUCCESS:
            found.update((c.client_id, c) for c in decode_producer_connections(reply.body))
        elif "not exist" not in (reply.remark or ""):  # (no producer of the group there)
            raise broker_error(addr, reply.code, reply.remark)
    return tuple(found[k] for k in sorted(found))


async def wipe_write_perm(instance: ClientInstance, broker: str) -> dict[str, int]:
    """Take write permission from broker ``broker``'s queues in every NameServer's routes, so
    that producers send elsewhere (``mqadmin wipeWritePerm``, before taking it down): per
    NameServer, how many topics changed."""
    return await _perm(instance, broker, RequestCode.WIPE_WRITE_PERM_OF_BROKER, "wipeTopicCount")


async def add_write_perm(instance: ClientInstance, broker: str) -> dict[str, int]:
    """Give write permission back (``mqadmin addWritePerm``): per NameServer, how many topics
    changed."""
    return await _perm(instance, broker, RequestCode.ADD_WRITE_PERM_OF_BROKER, "addTopicCount")


async def _perm(instance: ClientInstance, broker: str, code: int, count: str) -> dict[str, int]:
    if not isinstance(broker, str) or not broker:
        raise ConfigError(f"a broker name is needed, not {broker!r}")
    header = BrokerNameRequestHeader(broker_name=broker)
    changed = {}
    for addr in instance.namesrv.addrs:
        reply = await call(instance, addr, code, header.to_ext())
        changed[addr] = int(reply.ext_fields.get(count) or 0)
    return changed
