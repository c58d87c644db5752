"""Typed request and response headers, converted to and from a command's ``ext_fields``.

Every header is an attrs class whose fields carry their wire name in metadata; one generic
converter does the string conversion (ints in decimal, booleans ``true``/``false``, ``None``
omitted) and the checks (a missing required field or a malformed number is a
:class:`ProtocolError`). Send headers also know their single-letter names for
SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, ClassVar, Self

import attrs

from .errors import ProtocolError

__all__ = [
    "CheckTransactionStateRequestHeader",
    "ConsumeMessageDirectlyRequestHeader",
    "ConsumerSendMsgBackRequestHeader",
    "CreateTopicRequestHeader",
    "DeleteTopicFromNamesrvRequestHeader",
    "DeleteTopicRequestHeader",
    "EndTransactionRequestHeader",
    "GetConsumeStatsRequestHeader",
    "GetConsumerConnectionListRequestHeader",
    "GetConsumerListByGroupRequestHeader",
    "GetConsumerRunningInfoRequestHeader",
    "GetConsumerStatusRequestHeader",
    "GetEarliestMsgStoretimeRequestHeader",
    "GetMaxOffsetRequestHeader",
    "GetMinOffsetRequestHeader",
    "GetRouteInfoRequestHeader",
    "GetTopicStatsInfoRequestHeader",
    "Header",
    "NotifyConsumerIdsChangedRequestHeader",
    "OffsetResponseHeader",
    "PullMessageRequestHeader",
    "PullMessageResponseHeader",
    "QueryConsumerOffsetRequestHeader",
    "QueryMessageRequestHeader",
    "QueryMessageResponseHeader",
    "ReplyMessageRequestHeader",
    "ResetOffsetRequestHeader",
    "SearchOffsetRequestHeader",
    "SendMessageRequestHeader",
    "SendMessageResponseHeader",
    "TimestampResponseHeader",
    "UnregisterClientRequestHeader",
    "UpdateConsumerOffsetRequestHeader",
    "ViewMessageRequestHeader",
]


def wire(name: str, *, v2: str | None = None, default: Any = attrs.NOTHING) -> Any:
    """An attrs field sent as ``name`` (and as ``v2`` in SEND_MESSAGE_V2 headers)."""
    return attrs.field(default=default, metadata={"wire": name, "v2": v2})


def _render(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _parse(kind: str, name: str, raw: str) -> object:
    if kind == "bool":
        return raw.strip().lower() == "true"
    if kind == "int":
        try:
            return int(raw)
        except ValueError:
            raise ProtocolError("bad-header-field", f"{name}={raw!r} is not an integer") from None
    return raw


@attrs.frozen
class _Spec:
    attr: str
    wire: str
    v2: str | None
    kind: str  # "int" | "bool" | "str"
    required: bool
    nullable: bool  # None is a valid value (meaning: omit the field)


class Header:
    """Base of every typed header."""

    __slots__ = ()
    _specs: ClassVar[tuple[_Spec, ...]]

    @classmethod
    @functools.cache
    def specs(cls) -> tuple[_Spec, ...]:
        out = []
        for f in attrs.fields(cls):  # type: ignore[arg-type]
            text = str(f.type)
            kind = "bool" if "bool" in text else "int" if "int" in text else "str"
            out.append(
                _Spec(
                    attr=f.name,
                    wire=f.metadata["wire"],
                    v2=f.metadata.get("v2"),
                    kind=kind,
                    required=f.default is attrs.NOTHING,
                    nullable="None" in text,
                )
            )
        return tuple(out)

    def to_ext(self, *, v2: bool = False) -> dict[str, str]:
        ext: dict[str, str] = {}
        for spec in self.specs():
            value = getattr(self, spec.attr)
            if value is None:
                continue
            ext[(spec.v2 or spec.wire) if v2 else spec.wire] = _render(value)
        return ext

    @classmethod
    def from_ext(cls, ext: Mapping[str, str], *, v2: bool = False) -> Self:
        kwargs: dict[str, object] = {}
        for spec in cls.specs():
            key = (spec.v2 or spec.wire) if v2 else spec.wire
            raw = ext.get(key)
            if raw is None:
                if spec.required:
                    raise ProtocolError("missing-header-field", f"{cls.__name__} needs {key!r}")
                continue
            kwargs[spec.attr] = _parse(spec.kind, key, raw)
        return cls(**kwargs)


# --------------------------------------------------------------------------------------------
# send


@attrs.define(kw_only=True, slots=True)
class SendMessageRequestHeader(Header):
    """SEND_MESSAGE (10, long names); SEND_MESSAGE_V2 (310) / SEND_BATCH_MESSAGE (320, letters)."""

    producer_group: str = wire("producerGroup", v2="a")
    topic: str = wire("topic", v2="b")
    default_topic: str = wire("defaultTopic", v2="c", default="TBW102")
    default_topic_queue_nums: int = wire("defaultTopicQueueNums", v2="d", default=4)
    queue_id: int = wire("queueId", v2="e")
    sys_flag: int = wire("sysFlag", v2="f", default=0)
    born_timestamp: int = wire("bornTimestamp", v2="g")
    flag: int = wire("flag", v2="h", default=0)
    properties: str | None = wire("properties", v2="i", default=None)
    reconsume_times: int | None = wire("reconsumeTimes", v2="j", default=None)
    unit_mode: bool = wire("unitMode", v2="k", default=False)
    max_reconsume_times: int | None = wire("maxReconsumeTimes", v2="l", default=None)
    batch: bool | None = wire("batch", v2="m", default=None)
    broker_name: str | None = wire("bname", v2="n", default=None)


@attrs.define(kw_only=True, slots=True)
class SendMessageResponseHeader(Header):
    msg_id: str = wire("msgId")
    queue_id: int = wire("queueId")
    queue_offset: int = wire("queueOffset")
    transaction_id: str | None = wire("transactionId", default=None)
    batch_uniq_id: str | None = wire("batchUniqId", default=None)
    region_id: str | None = wire("MSG_REGION", default=None)
    trace_on: str | None = wire("TRACE_ON", default=None)
    recall_handle: str | None = wire("recallHandle", default=None)  # 5.3.2+: timer messages


# --------------------------------------------------------------------------------------------
# pull and offsets


@attrs.define(kw_only=True, slots=True)
class PullMessageRequestHeader(Header):
    consumer_group: str = wire("consumerGroup")
    topic: str = wire("topic")
    queue_id: int = wire("queueId")
    queue_offset: int = wire("queueOffset")
    max_msg_nums: int = wire("maxMsgNums")
    sys_flag: int = wire("sysFlag")
    commit_offset: int = wire("commitOffset", default=0)
    suspend_timeout_millis: int = wire("suspendTimeoutMillis")
    subscription: str | None = wire("subscription", default=None)
    sub_version: int = wire("subVersion", default=0)
    expression_type: str | None = wire("expressionType", default=None)
    max_msg_bytes: int | None = wire("maxMsgBytes", default=None)
    broker_name: str | None = wire("bname", default=None)


@attrs.define(kw_only=True, slots=True)
class PullMessageResponseHeader(Header):
    suggest_which_broker_id: int = wire("suggestWhichBrokerId", default=0)
    next_begin_offset: int = wire("nextBeginOffset")
    min_offset: int = wire("minOffset")
    max_offset: int = wire("maxOffset")
    offset_delta: int | None = wire("offsetDelta", default=None)
    topic_sys_flag: int | None = wire("topicSysFlag", default=None)
    group_sys_flag: int | None = wire("groupSysFlag", default=None)
    forbidden_type: int | None = wire("forbiddenType", default=None)


@attrs.define(kw_only=True, slots=True)
class QueryConsumerOffsetRequestHeader(Header):
    consumer_group: str = wire("consumerGroup")
    topic: str = wire("topic")
    queue_id: int = wire("queueId")
    set_zero_if_not_found: bool | None = wire("setZeroIfNotFound", default=None)
    broker_name: str | None = wire("bname", default=None)


@attrs.define(kw_only=True, slots=True)
class UpdateConsumerOffsetRequestHeader(Header):
    consumer_group: str = wire("consumerGroup")
    topic: str = wire("topic")
    queue_id: int = wire("queueId")
    commit_offset: int = wire("commitOffset")
    broker_name: str | None = wire("bname", default=None)


@attrs.define(kw_only=True, slots=True)
class GetMaxOffsetRequestHeader(Header):
    topic: str = wire("topic")
    queue_id: int = wire("queueId")
    committed: bool | None = wire("committed", default=None)
    broker_name: str | None = wire("bname", default=None)


@attrs.define(kw_only=True, slots=True)
class GetMinOffsetRequestHeader(Header):
    topic: str = wire("topic")
    queue_id: int = wire("queueId")
    broker_name: str | None = wire("bname", default=None)


@attrs.define(kw_only=True, slots=True)
class SearchOffsetRequestHeader(Header):
    topic: str = wire("topic")
    queue_id: int = wire("queueId")
    timestamp: int = wire("timestamp")
    boundary_type: str | None = wire("boundaryType", default=None)
    broker_name: str | None = wire("bname", default=None)


@attrs.define(kw_only=True, slots=True)
class GetEarliestMsgStoretimeRequestHeader(Header):
    topic: str = wire("topic")
    queue_id: int = wire("queueId")
    broker_name: str | None = wire("bname", default=None)


@attrs.define(kw_only=True, slots=True)
class OffsetResponseHeader(Header):
    """Response of QUERY_CONSUMER_OFFSET, GET_MAX/MIN_OFFSET, SEARCH_OFFSET_BY_TIMESTAMP."""

    offset: int = wire("offset")


@attrs.define(kw_only=True, slots=True)
class TimestampResponseHeader(Header):
    timestamp: int = wire("timestamp")


# --------------------------------------------------------------------------------------------
# clients, groups, retries, transactions


@attrs.define(kw_only=True, slots=True)
class UnregisterClientRequestHeader(Header):
    client_id: str = wire("clientID")
    producer_group: str | None = wire("producerGroup", default=None)
    consumer_group: str | None = wire("consumerGroup", default=None)


@attrs.define(kw_only=True, slots=True)
class GetConsumerListByGroupRequestHeader(Header):
    consumer_group: str = wire("consumerGroup")


@attrs.define(kw_only=True, slots=True)
class ConsumerSendMsgBackRequestHeader(Header):
    offset: int = wire("offset")
    group: str = wire("group")
    delay_level: int = wire("delayLevel")
    origin_msg_id: str | None = wire("originMsgId", default=None)
    origin_topic: str | None = wire("originTopic", default=None)
    unit_mode: bool = wire("unitMode", default=False)
    max_reconsume_times: int | None = wire("maxReconsumeTimes", default=None)
    broker_name: str | None = wire("bname", default=None)


@attrs.define(kw_only=True, slots=True)
class EndTransactionRequestHeader(Header):
    producer_group: str = wire("producerGroup")
    tran_state_table_offset: int = wire("tranStateTableOffset")
    commit_log_offset: int = wire("commitLogOffset")
    commit_or_rollback: int = wire("commitOrRollback")
    from_transaction_check: bool = wire("fromTransactionCheck", default=False)
    msg_id: str = wire("msgId")
    transaction_id: str | None = wire("transactionId", default=None)
    topic: str | None = wire("topic", default=None)
    broker_name: str | None = wire("bname", default=None)


# --------------------------------------------------------------------------------------------
# NameServer, admin, queries


@attrs.define(kw_only=True, slots=True)
class GetRouteInfoRequestHeader(Header):
    topic: str = wire("topic")
    accept_standard_json_only: bool | None = wire("acceptStandardJsonOnly", default=None)


@attrs.define(kw_only=True, slots=True)
class CreateTopicRequestHeader(Header):
    topic: str = wire("topic")
    default_topic: str = wire("defaultTopic", default="TBW102")
    read_queue_nums: int = wire("readQueueNums")
    write_queue_nums: int = wire("writeQueueNums")
    perm: int = wire("perm", default=6)
    topic_filter_type: str = wire("topicFilterType", default="SINGLE_TAG")
    topic_sys_flag: int | None = wire("topicSysFlag", default=None)
    order: bool = wire("order", default=False)
    attributes: str | None = wire("attributes", default=None)
    force: bool | None = wire("force", default=None)


@attrs.define(kw_only=True, slots=True)
class DeleteTopicRequestHeader(Header):
    """DELETE_TOPIC_IN_BROKER (215)."""

    topic: str = wire("topic")


@attrs.define(kw_only=True, slots=True)
class DeleteTopicFromNamesrvRequestHeader(Header):
    """DELETE_TOPIC_IN_NAMESRV (216); ``clusterName`` (5.x) limits it to one cluster."""

    topic: str = wire("topic")
    cluster_name: str | None = wire("clusterName", default=None)


@attrs.define(kw_only=True, slots=True)
class GetTopicStatsInfoRequestHeader(Header):
    """GET_TOPIC_STATS_INFO (202)."""

    topic: str = wire("topic")


@attrs.define(kw_only=True, slots=True)
class GetConsumerConnectionListRequestHeader(Header):
    """GET_CONSUMER_CONNECTION_LIST (203)."""

    consumer_group: str = wire("consumerGroup")


@attrs.define(kw_only=True, slots=True)
class GroupRequestHeader(Header):
    """DELETE_SUBSCRIPTIONGROUP (207): ``cleanOffset`` drops its offsets too (4.9+)."""

    group_name: str = wire("groupName")
    clean_offset: bool = wire("cleanOffset", default=False)


@attrs.define(kw_only=True, slots=True)
class CloneGroupOffsetRequestHeader(Header):
    """CLONE_GROUP_OFFSET (314): ``srcGroup``'s committed offsets of ``topic`` copied to
    ``destGroup``; not ``offline``, a broker skips a topic the source's online members do not
    subscribe to."""

    src_group: str = wire("srcGroup")
    dest_group: str = wire("destGroup")
    topic: str = wire("topic")
    offline: bool = wire("offline", default=False)


@attrs.define(kw_only=True, slots=True)
class ProducerGroupRequestHeader(Header):
    """GET_PRODUCER_CONNECTION_LIST (204)."""

    producer_group: str = wire("producerGroup")


@attrs.define(kw_only=True, slots=True)
class BrokerNameRequestHeader(Header):
    """WIPE_WRITE_PERM_OF_BROKER (205) and ADD_WRITE_PERM_OF_BROKER (327), to a NameServer;
    the answer counts the topics changed (``wipeTopicCount`` / ``addTopicCount``)."""

    broker_name: str = wire("brokerName")


@attrs.define(kw_only=True, slots=True)
class GetConsumeStatsRequestHeader(Header):
    """GET_CONSUME_STATS (208); without ``topic`` every topic the group has offsets for."""

    consumer_group: str = wire("consumerGroup")
    topic: str | None = wire("topic", default=None)


@attrs.define(kw_only=True, slots=True)
class ViewMessageRequestHeader(Header):
    offset: int = wire("offset")
    topic: str | None = wire("topic", default=None)


@attrs.define(kw_only=True, slots=True)
class QueryMessageRequestHeader(Header):
    topic: str = wire("topic")
    key: str = wire("key")
    max_num: int = wire("maxNum")
    begin_timestamp: int = wire("beginTimestamp")
    end_timestamp: int = wire("endTimestamp")
    unique_key_query: bool = wire("_UNIQUE_KEY_QUERY", default=False)


@attrs.define(kw_only=True, slots=True)
class QueryMessageResponseHeader(Header):
    index_last_update_timestamp: int = wire("indexLastUpdateTimestamp")
    index_last_update_phyoffset: int = wire("indexLastUpdatePhyoffset")


# --------------------------------------------------------------------------------------------
# broker -> client requests


@attrs.define(kw_only=True, slots=True)
class CheckTransactionStateRequestHeader(Header):
    """CHECK_TRANSACTION_STATE (39)."""

    topic: str | None = wire("topic", default=None)
    tran_state_table_offset: int = wire("tranStateTableOffset")
    commit_log_offset: int = wire("commitLogOffset")
    msg_id: str | None = wire("msgId", default=None)
    transaction_id: str | None = wire("transactionId", default=None)
    offset_msg_id: str | None = wire("offsetMsgId", default=None)
    broker_name: str | None = wire("bname", default=None)


@attrs.define(kw_only=True, slots=True)
class ReplyMessageRequestHeader(Header):
    """PUSH_REPLY_MESSAGE_TO_CLIENT (326): the reply's send header as the broker passes it on
    (Java ``ReplyMessageRequestHeader``; the body is the reply's, as the responder sent it)."""

    producer_group: str = wire("producerGroup")
    topic: str = wire("topic")
    queue_id: int = wire("queueId")
    sys_flag: int = wire("sysFlag", default=0)
    born_timestamp: int = wire("bornTimestamp", default=0)
    flag: int = wire("flag", default=0)
    properties: str | None = wire("properties", default=None)
    born_host: str | None = wire("bornHost", default=None)
    store_host: str | None = wire("storeHost", default=None)
    store_timestamp: int = wire("storeTimestamp", default=0)


@attrs.define(kw_only=True, slots=True)
class NotifyConsumerIdsChangedRequestHeader(Header):
    """NOTIFY_CONSUMER_IDS_CHANGED (40)."""

    consumer_group: str = wire("consumerGroup")


@attrs.define(kw_only=True, slots=True)
class ResetOffsetRequestHeader(Header):
    """RESET_CONSUMER_CLIENT_OFFSET (220)."""

    topic: str = wire("topic")
    group: str = wire("group")
    timestamp: int = wire("timestamp")
    is_force: bool = wire("isForce", default=False)


@attrs.define(kw_only=True, slots=True)
class GetConsumerStatusRequestHeader(Header):
    """GET_CONSUMER_STATUS_FROM_CLIENT (221)."""

    topic: str = wire("topic")
    group: str = wire("group")
    client_addr: str | None = wire("clientAddr", default=None)


@attrs.define(kw_only=True, slots=True)
class GetConsumerRunningInfoRequestHeader(Header):
    """GET_CONSUMER_RUNNING_INFO (307)."""

    consumer_group: str = wire("consumerGroup")
    client_id: str = wire("clientId")
    jstack_enable: bool = wire("jstackEnable", default=False)


@attrs.define(kw_only=True, slots=True)
class ConsumeMessageDirectlyRequestHeader(Header):
    """CONSUME_MESSAGE_DIRECTLY (309)."""

    consumer_group: str = wire("consumerGroup")
    client_id: str | None = wire("clientId", default=None)
    msg_id: str | None = wire("msgId", default=None)
    broker_name: str | None = wire("brokerName", default=None)
    topic: str | None = wire("topic", default=None)
    topic_sys_flag: int | None = wire("topicSysFlag", default=None)
    group_sys_flag: int | None = wire("groupSysFlag", default=None)
