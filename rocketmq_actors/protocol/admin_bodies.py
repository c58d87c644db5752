"""Typed views of the JSON bodies brokers return to administration requests (what Java's
``MQAdminExt`` reads): topic stats, consume stats, consumer connections, runtime info and the
subscription group table. fastjson writes ``MessageQueue`` map keys as objects, which
:mod:`.jsonlax` reads."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import attrs

from .bodies import MessageQueue, _body_decoder, _field, _object
from .errors import ProtocolError

__all__ = [
    "ClientConnection",
    "ConsumeStats",
    "ConsumerConnection",
    "OffsetWrapper",
    "TopicConfig",
    "TopicOffset",
    "decode_all_topic_configs",
    "decode_kv_table",
    "decode_producer_connections",
    "decode_properties",
    "decode_subscription_groups",
    "decode_topic_stats",
    "encode_properties_text",
    "encode_subscription_group",
]


def _queue_rows(table: Any, what: str) -> list[tuple[MessageQueue, Mapping[str, Any]]]:
    if not isinstance(table, Mapping):
        raise ProtocolError("bad-body", f"{what} is not an object")
    rows = []
    for key, value in table.items():
        if not isinstance(value, Mapping):
            raise ProtocolError("bad-body", f"{what} value is not an object")
        rows.append((MessageQueue.from_json(key), value))
    return sorted(rows, key=lambda row: row[0])


@attrs.frozen(kw_only=True)
class TopicOffset:
    """One queue of TopicStatsTable (GET_TOPIC_STATS_INFO, 202): Java's ``TopicOffset``."""

    min_offset: int
    max_offset: int
    last_update_timestamp: int


@_body_decoder
def decode_topic_stats(body: bytes) -> dict[MessageQueue, TopicOffset]:
    """``{"offsetTable": {<MessageQueue>: {minOffset, maxOffset, lastUpdateTimestamp}}}``."""
    table = _object(body, "topic stats").get("offsetTable", {})
    return {
        queue: TopicOffset(
            min_offset=_field(row, "minOffset", int, 0),
            max_offset=_field(row, "maxOffset", int, 0),
            last_update_timestamp=_field(row, "lastUpdateTimestamp", int, 0),
        )
        for queue, row in _queue_rows(table, "offsetTable")
    }


@attrs.frozen(kw_only=True)
class OffsetWrapper:
    """One queue of ConsumeStats (GET_CONSUME_STATS, 208): Java's ``OffsetWrapper``."""

    broker_offset: int
    consumer_offset: int
    pull_offset: int
    last_timestamp: int

    @property
    def lag(self) -> int:
        return max(0, self.broker_offset - self.consumer_offset)


@attrs.frozen(kw_only=True)
class ConsumeStats:
    offsets: Mapping[MessageQueue, OffsetWrapper]
    consume_tps: float

    @classmethod
    @_body_decoder
    def decode(cls, body: bytes) -> ConsumeStats:
        obj = _object(body, "consume stats")
        tps = obj.get("consumeTps", 0)
        return cls(
            offsets={
                queue: OffsetWrapper(
                    broker_offset=_field(row, "brokerOffset", int, 0),
                    consumer_offset=_field(row, "consumerOffset", int, 0),
                    pull_offset=_field(row, "pullOffset", int, 0),
                    last_timestamp=_field(row, "lastTimestamp", int, 0),
                )
                for queue, row in _queue_rows(obj.get("offsetTable", {}), "offsetTable")
            },
            consume_tps=float(tps) if isinstance(tps, int | float) else 0.0,
        )


@attrs.frozen(kw_only=True)
class ClientConnection:
    """Java's ``Connection``: one online client of a group."""

    client_id: str
    client_addr: str
    language: str
    version: int


def _connection(c: Any) -> ClientConnection:
    if not isinstance(c, Mapping):
        raise ProtocolError("bad-body", "a connection is not an object")
    return ClientConnection(
        client_id=_field(c, "clientId", str, ""),
        client_addr=_field(c, "clientAddr", str, ""),
        language=str(c.get("language", "")),
        version=_field(c, "version", int, 0),
    )


@attrs.frozen(kw_only=True)
class ConsumerConnection:
    """GET_CONSUMER_CONNECTION_LIST (203) reply: Java's ``ConsumerConnection``."""

    connections: tuple[ClientConnection, ...]
    subscriptions: Mapping[str, str]  # topic -> expression
    consume_type: str
    message_model: str
    consume_from_where: str

    @classmethod
    @_body_decoder
    def decode(cls, body: bytes) -> ConsumerConnection:
        obj = _object(body, "consumer connection")
        conns = _field(obj, "connectionSet", list, [])
        subs = _field(obj, "subscriptionTable", dict, {})
        return cls(
            connections=tuple(sorted((_connection(c) for c in conns), key=lambda c: c.client_id)),
            subscriptions={
                str(topic): str(sub.get("subString", "*")) if isinstance(sub, Mapping) else "*"
                for topic, sub in subs.items()
            },
            consume_type=str(obj.get("consumeType") or ""),
            message_model=str(obj.get("messageModel") or ""),
            consume_from_where=str(obj.get("consumeFromWhere") or ""),
        )


@_body_decoder
def decode_kv_table(body: bytes) -> dict[str, str]:
    """GET_BROKER_RUNTIME_INFO (28) reply, a ``KVTable``: ``{"table": {key: value}}``."""
    table = _field(_object(body, "KVTable"), "table", dict, {})
    return {str(k): str(v) for k, v in sorted(table.items())}


@_body_decoder
def decode_producer_connections(body: bytes) -> tuple[ClientConnection, ...]:
    """GET_PRODUCER_CONNECTION_LIST (204) reply, Java's ``ProducerConnection``:
    ``{"connectionSet": [{clientId, clientAddr, language, version}]}``, by client id."""
    conns = _field(_object(body, "producer connection"), "connectionSet", list, [])
    return tuple(sorted((_connection(c) for c in conns), key=lambda c: c.client_id))


def decode_properties(body: bytes) -> dict[str, str]:
    """GET_BROKER_CONFIG (26) reply: ``java.util.Properties`` text, a ``key=value`` line per
    setting (the broker writes no escapes; comment and blank lines are skipped)."""
    try:
        text = body.decode()
    except UnicodeDecodeError as exc:
        raise ProtocolError("bad-body", f"broker config is not UTF-8: {exc}") from None
    out: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", "!")):
            continue
        key, _, value = line.partition("=")
        out[key.strip()] = value.strip()
    return dict(sorted(out.items()))


def encode_properties_text(settings: Mapping[str, str]) -> bytes:
    """UPDATE_BROKER_CONFIG (25) body: ``key=value`` lines (what Java's
    ``MixAll.properties2String`` writes)."""
    return "".join(f"{key}={value}\n" for key, value in settings.items()).encode()


def encode_subscription_group(group: str, settings: Mapping[str, Any]) -> bytes:
    """UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200) body: a ``SubscriptionGroupConfig`` with
    ``settings`` (its JSON field names) over Java's defaults."""
    config: dict[str, Any] = {
        "groupName": group, "consumeEnable": True, "consumeFromMinEnable": True,
        "consumeBroadcastEnable": True, "consumeMessageOrderly": False, "retryQueueNums": 1,
        "retryMaxTimes": 16, "brokerId": 0, "whichBrokerWhenConsumeSlowly": 1,
        "notifyConsumerIdsChangedEnable": True, "groupSysFlag": 0, "consumeTimeoutMinute": 15,
    }  # fmt: skip
    config.update(settings)
    return json.dumps(config).encode()


@_body_decoder
def decode_subscription_groups(body: bytes) -> dict[str, dict[str, Any]]:
    """GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201) reply, a ``SubscriptionGroupWrapper``: group
    name -> its ``SubscriptionGroupConfig`` fields (consumeEnable, retryMaxTimes, ...)."""
    table = _field(_object(body, "subscription groups"), "subscriptionGroupTable", dict, {})
    out: dict[str, dict[str, Any]] = {}
    for name, config in table.items():
        if not isinstance(config, Mapping):
            raise ProtocolError("bad-body", f"group {name!r} config is not an object")
        out[str(name)] = {
            "consume_enable": bool(config.get("consumeEnable", True)),
            "consume_broadcast_enable": bool(config.get("consumeBroadcastEnable", True)),
            "consume_orderly": bool(config.get("consumeMessageOrderly", False)),
            "retry_queue_nums": _field(config, "retryQueueNums", int, 1),
            "retry_max_times": _field(config, "retryMaxTimes", int, 16),
        }
    return dict(sorted(out.items()))


@attrs.frozen(kw_only=True)
class TopicConfig:
    """A broker's ``TopicConfig`` of one topic: what UPDATE_AND_CREATE_TOPIC (17) sets."""

    read_queues: int
    write_queues: int
    perm: int
    order: bool
    topic_sys_flag: int
    topic_filter_type: str

    @classmethod
    def from_json(cls, config: Any) -> TopicConfig:
        if not isinstance(config, Mapping):
            raise ProtocolError("bad-body", "topic config is not an object")
        return cls(
            read_queues=_field(config, "readQueueNums", int, 0),
            write_queues=_field(config, "writeQueueNums", int, 0),
            perm=_field(config, "perm", int, 6),
            order=bool(config.get("order", False)),
            topic_sys_flag=_field(config, "topicSysFlag", int, 0),
            topic_filter_type=str(config.get("topicFilterType", "SINGLE_TAG")),
        )

    @classmethod
    @_body_decoder
    def decode(cls, body: bytes) -> TopicConfig:
        """GET_TOPIC_CONFIG (351, 5.x) reply: one ``TopicConfigAndQueueMapping``."""
        return cls.from_json(_object(body, "topic config"))


@_body_decoder
def decode_all_topic_configs(body: bytes) -> dict[str, TopicConfig]:
    """GET_ALL_TOPIC_CONFIG (21) reply, a ``TopicConfigSerializeWrapper``: topic -> config."""
    table = _field(_object(body, "topic configs"), "topicConfigTable", dict, {})
    return {str(name): TopicConfig.from_json(config) for name, config in table.items()}


def encode_message_request_mode(topic: str, group: str, mode: str, pop_share: int) -> bytes:
    """SET_MESSAGE_REQUEST_MODE (401) body, Java's ``SetMessageRequestModeRequestBody``."""
    return json.dumps({"topic": topic, "consumerGroup": group, "mode": mode,
                       "popShareQueueNum": pop_share}).encode()  # fmt: skip


@_body_decoder
def decode_message_request_modes(body: bytes) -> dict[str, dict[str, dict[str, Any]]]:
    """GET_ALL_MESSAGE_REQUEST_MODE (402) reply, a ``MessageRequestModeSerializeWrapper``:
    topic -> group -> ``{"mode": "PULL" | "POP", "pop_share_queue_num": n}``."""
    table = _field(_object(body, "message request modes"), "messageRequestModeMap", dict, {})
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for topic, groups in table.items():
        if not isinstance(groups, Mapping):
            raise ProtocolError("bad-body", f"topic {topic!r} request modes is not an object")
        for group, entry in groups.items():
            if not isinstance(entry, Mapping):
                raise ProtocolError("bad-body", f"group {group!r} request mode is not an object")
            out.setdefault(str(topic), {})[str(group)] = {
                "mode": str(_field(entry, "mode", str, "PULL")),
                "pop_share_queue_num": _field(entry, "popShareQueueNum", int, 0),
            }
    return out
