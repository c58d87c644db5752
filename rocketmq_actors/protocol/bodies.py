"""Typed views of the JSON bodies the NameServer returns (route data, cluster info)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ParamSpec, TypeVar

import attrs

from . import jsonlax
from .addresses import parse_addr
from .errors import ProtocolError

__all__ = [
    "BrokerData",
    "ClusterInfo",
    "ConsumerData",
    "HeartbeatData",
    "MessageQueue",
    "QueueData",
    "SubscriptionData",
    "TopicRouteData",
    "decode_consumer_list",
    "decode_lock_batch_response",
    "decode_offset_table",
    "encode_check_client",
    "encode_consume_directly_result",
    "encode_consumer_status",
    "encode_lock_batch",
    "encode_running_info",
]

PERM_READ = 0x4
PERM_WRITE = 0x2
MASTER_ID = 0


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _body_decoder(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """A body decoder raises only ``ProtocolError``: whatever shape a peer's JSON takes, a
    conversion failure inside (a number where a list was expected...) becomes a typed error."""

    @functools.wraps(fn)
    def decode(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return fn(*args, **kwargs)
        except ProtocolError:
            raise
        except (TypeError, ValueError, KeyError, AttributeError, IndexError, RecursionError) as exc:
            raise ProtocolError(
                "bad-body", f"{fn.__qualname__}: {type(exc).__name__}: {exc}"
            ) from None

    return decode


def _field(obj: Mapping[str, Any], key: str, kind: type, default: Any = None) -> Any:
    value = obj.get(key, default)
    if value is None and default is not None:
        return default
    if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise ProtocolError("bad-body", f"{key!r} should be an integer, got {value!r}")
    if kind is not int and not isinstance(value, kind):
        raise ProtocolError("bad-body", f"{key!r} should be {kind.__name__}, got {value!r}")
    return value


@attrs.frozen
class BrokerData:
    """Addresses of one broker name: id 0 is the master, ids >= 1 are slaves."""

    cluster: str
    broker_name: str
    broker_addrs: Mapping[int, str]

    @property
    def master_addr(self) -> str | None:
        return self.broker_addrs.get(MASTER_ID)

    @classmethod
    def from_json(cls, obj: Any) -> BrokerData:
        if not isinstance(obj, Mapping):
            raise ProtocolError("bad-body", "BrokerData is not an object")
        raw = _field(obj, "brokerAddrs", dict, {})
        addrs: dict[int, str] = {}
        for key, addr in raw.items():
            try:
                broker_id = int(key)
            except (TypeError, ValueError):
                raise ProtocolError("bad-body", f"broker id {key!r} is not an integer") from None
            parse_addr(addr)  # a route with a bad address is refused whole, never used
            addrs[broker_id] = addr
        return cls(
            cluster=_field(obj, "cluster", str, ""),
            broker_name=_field(obj, "brokerName", str),
            broker_addrs=addrs,
        )


#: queues of one topic on one broker beyond which a route is refused (a route announcing 2^31-1
#: queues would otherwise build as many MessageQueue objects)
MAX_QUEUES = 16384


def _queue_count(count: int) -> int:
    if not 0 <= count <= MAX_QUEUES:
        raise ProtocolError("bad-body", f"queue count {count} is outside 0..{MAX_QUEUES}")
    return count


def parse_order_topic_conf(conf: str) -> tuple[tuple[str, int], ...]:
    """``"broker-a:4;broker-b:4"`` as ``((broker name, queue count), ...)``; malformed items
    are skipped, counts are bounded as a route's are."""
    out = []
    for item in conf.split(";"):
        name, _, count = item.partition(":")
        if name and count.isdigit() and len(count) <= 6:
            out.append((name, _queue_count(int(count))))
    return tuple(out)


@attrs.frozen
class QueueData:
    broker_name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_sys_flag: int = 0

    @classmethod
    def from_json(cls, obj: Any) -> QueueData:
        if not isinstance(obj, Mapping):
            raise ProtocolError("bad-body", "QueueData is not an object")
        sys_flag = obj.get("topicSysFlag", obj.get("topicSynFlag", 0))
        return cls(
            broker_name=_field(obj, "brokerName", str),
            read_queue_nums=_queue_count(_field(obj, "readQueueNums", int)),
            write_queue_nums=_queue_count(_field(obj, "writeQueueNums", int)),
            perm=_field(obj, "perm", int),
            topic_sys_flag=sys_flag if isinstance(sys_flag, int) else 0,
        )


@attrs.frozen
class TopicRouteData:
    queue_datas: tuple[QueueData, ...]
    broker_datas: tuple[BrokerData, ...]
    order_topic_conf: str | None = None

    @classmethod
    @_body_decoder
    def decode(cls, body: bytes) -> TopicRouteData:
        obj = jsonlax.loads(body)
        if not isinstance(obj, Mapping):
            raise ProtocolError("bad-body", "TopicRouteData is not an object")
        queues = _field(obj, "queueDatas", list, [])
        brokers = _field(obj, "brokerDatas", list, [])
        conf = obj.get("orderTopicConf")
        if isinstance(conf, str):
            parse_order_topic_conf(conf)  # bounded, or the route is refused
        return cls(
            queue_datas=tuple(QueueData.from_json(q) for q in queues),
            broker_datas=tuple(BrokerData.from_json(b) for b in brokers),
            order_topic_conf=conf if isinstance(conf, str) and conf else None,
        )


@attrs.frozen
class ClusterInfo:
    """Response body of GET_BROKER_CLUSTER_INFO (106)."""

    brokers: Mapping[str, BrokerData]
    clusters: Mapping[str, tuple[str, ...]]

    @classmethod
    @_body_decoder
    def decode(cls, body: bytes) -> ClusterInfo:
        obj = jsonlax.loads(body)
        if not isinstance(obj, Mapping):
            raise ProtocolError("bad-body", "ClusterInfo is not an object")
        table = _field(obj, "brokerAddrTable", dict, {})
        clusters = _field(obj, "clusterAddrTable", dict, {})
        return cls(
            brokers={str(name): BrokerData.from_json(data) for name, data in table.items()},
            clusters={
                str(name): tuple(str(b) for b in (members or ()))
                for name, members in clusters.items()
            },
        )


# --------------------------------------------------------------------------------------------
# bodies the client sends, and the broker's requests to the client


@attrs.frozen(order=True, cache_hash=True)  # a dict key on every consumed message's path
class MessageQueue:
    """One queue of a topic on one broker. Ordering is (topic, broker_name, queue_id), the
    order every member of a consumer group must sort by."""

    topic: str
    broker_name: str
    queue_id: int

    def to_json(self) -> dict[str, Any]:
        return {"brokerName": self.broker_name, "queueId": self.queue_id, "topic": self.topic}

    @classmethod
    def from_json(cls, obj: Any) -> MessageQueue:
        if not isinstance(obj, Mapping):
            raise ProtocolError("bad-body", f"MessageQueue is not an object: {obj!r}")
        return cls(
            topic=_field(obj, "topic", str),
            broker_name=_field(obj, "brokerName", str),
            queue_id=_field(obj, "queueId", int),
        )


@attrs.frozen(kw_only=True)
class SubscriptionData:
    topic: str
    sub_string: str = "*"
    tags: tuple[str, ...] = ()
    codes: tuple[int, ...] = ()
    sub_version: int = 0
    expression_type: str = "TAG"

    def to_json(self) -> dict[str, Any]:
        return {
            "classFilterMode": False,
            "codeSet": list(self.codes),
            "expressionType": self.expression_type,
            "subString": self.sub_string,
            "subVersion": self.sub_version,
            "tagsSet": list(self.tags),
            "topic": self.topic,
        }


@attrs.frozen(kw_only=True)
class ConsumerData:
    group: str
    consume_type: str  # CONSUME_PASSIVELY (push) / CONSUME_ACTIVELY (pull)
    message_model: str  # CLUSTERING / BROADCASTING
    consume_from_where: str
    subscriptions: tuple[SubscriptionData, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "consumeFromWhere": self.consume_from_where,
            "consumeType": self.consume_type,
            "groupName": self.group,
            "messageModel": self.message_model,
            "subscriptionDataSet": [s.to_json() for s in self.subscriptions],
            "unitMode": False,
        }


@attrs.frozen(kw_only=True)
class HeartbeatData:
    """Body of HEART_BEAT (34). Note the capital "ID" in ``clientID``."""

    client_id: str
    producer_groups: tuple[str, ...] = ()
    consumers: tuple[ConsumerData, ...] = ()

    def encode(self) -> bytes:
        return jsonlax.dumps(
            {
                "clientID": self.client_id,
                "consumerDataSet": [c.to_json() for c in self.consumers],
                "heartbeatFingerprint": 0,
                "producerDataSet": [{"groupName": g} for g in self.producer_groups],
                "withoutSub": False,
            }
        )


def encode_check_client(client_id: str, group: str, subscription: SubscriptionData) -> bytes:
    """Body of CHECK_CLIENT_CONFIG (46): Java's CheckClientRequestBody."""
    return jsonlax.dumps(
        {"clientId": client_id, "group": group, "subscriptionData": subscription.to_json()}
    )


def encode_lock_batch(group: str, client_id: str, queues: Iterable[MessageQueue]) -> bytes:
    """Body of LOCK_BATCH_MQ (41) and UNLOCK_BATCH_MQ (42). Note the lower-case "Id"."""
    return jsonlax.dumps(
        {
            "clientId": client_id,
            "consumerGroup": group,
            "mqSet": [q.to_json() for q in sorted(queues)],
            "onlyThisBroker": False,
        }
    )


@_body_decoder
def decode_lock_batch_response(body: bytes) -> frozenset[MessageQueue]:
    obj = jsonlax.loads(body)
    if not isinstance(obj, Mapping):
        raise ProtocolError("bad-body", "lock response is not an object")
    return frozenset(MessageQueue.from_json(q) for q in _field(obj, "lockOKMQSet", list, []))


@_body_decoder
def decode_consumer_list(body: bytes) -> tuple[str, ...]:
    """Body of a GET_CONSUMER_LIST_BY_GROUP (38) response."""
    obj = jsonlax.loads(body)
    if not isinstance(obj, Mapping):
        raise ProtocolError("bad-body", "consumer list is not an object")
    ids = _field(obj, "consumerIdList", list, [])
    if not all(isinstance(i, str) for i in ids):
        raise ProtocolError("bad-body", "consumer ids must be strings")
    return tuple(ids)


@_body_decoder
def decode_offset_table(body: bytes) -> dict[MessageQueue, int]:
    """``{"offsetTable": {<MessageQueue>: offset}}`` of RESET_CONSUMER_CLIENT_OFFSET (220),
    in fastjson's object-key form or the list form some admin tools request."""
    obj = jsonlax.loads(body)
    if not isinstance(obj, Mapping):
        raise ProtocolError("bad-body", "reset-offset body is not an object")
    table = obj.get("offsetTable", {})
    out: dict[MessageQueue, int] = {}
    if isinstance(table, Mapping):
        for key, offset in table.items():
            if not isinstance(offset, int) or isinstance(offset, bool):
                raise ProtocolError("bad-body", f"offset {offset!r} is not an integer")
            out[MessageQueue.from_json(key)] = offset
    elif isinstance(table, list):
        for row in table:
            out[MessageQueue.from_json(row)] = _field(row, "offset", int)
    else:
        raise ProtocolError("bad-body", "offsetTable is neither a map nor a list")
    return out


def encode_consumer_status(offsets: Mapping[MessageQueue, int]) -> bytes:
    """Reply body of GET_CONSUMER_STATUS_FROM_CLIENT (221): object-keyed, as fastjson writes."""
    return jsonlax.dumps(
        {
            "messageQueueTable": {
                jsonlax.FrozenObject(q.to_json()): off for q, off in sorted(offsets.items())
            }
        }
    )


def encode_consume_directly_result(
    *, result: str, remark: str, spent_ms: int, order: bool = False
) -> bytes:
    """Reply body of CONSUME_MESSAGE_DIRECTLY (309); ``result`` is CR_SUCCESS, CR_LATER, ..."""
    return jsonlax.dumps(
        {
            "autoCommit": True,
            "consumeResult": result,
            "order": order,
            "remark": remark,
            "spentTimeMills": spent_ms,
        }
    )


def encode_running_info(
    *,
    properties: Mapping[str, str],
    subscriptions: Iterable[SubscriptionData],
    queue_offsets: Mapping[MessageQueue, Mapping[str, Any]],
) -> bytes:
    """Reply body of GET_CONSUMER_RUNNING_INFO (307): a ConsumerRunningInfo subset."""
    return jsonlax.dumps(
        {
            "jstack": "",
            "mqPopTable": {},
            "mqTable": {
                jsonlax.FrozenObject(q.to_json()): dict(v) for q, v in sorted(queue_offsets.items())
            },
            "properties": dict(properties),
            "statusTable": {},
            "subscriptionSet": [s.to_json() for s in subscriptions],
            "userConsumerInfo": {},
        }
    )


# --------------------------------------------------------------------------------------------
# administration replies (forwarded by the broker from the group's clients)


def _object(body: bytes, what: str) -> Mapping[Any, Any]:
    obj = jsonlax.loads(body)
    if not isinstance(obj, Mapping):
        raise ProtocolError("bad-body", f"{what} is not an object")
    return obj


def _queue_map(table: Any, what: str) -> dict[MessageQueue, Any]:
    if not isinstance(table, Mapping):
        raise ProtocolError("bad-body", f"{what} is not an object")
    return {MessageQueue.from_json(key): value for key, value in table.items()}


@_body_decoder
def decode_consumer_status(body: bytes) -> dict[str, dict[MessageQueue, int]]:
    """INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223) reply: client id -> queue -> offset."""
    table = _object(body, "consumer status").get("consumerTable", {})
    if not isinstance(table, Mapping):
        raise ProtocolError("bad-body", "consumerTable is not an object")
    return {str(cid): _queue_map(queues, "queue table") for cid, queues in table.items()}


@attrs.frozen(kw_only=True)
class RunningInfo:
    """GET_CONSUMER_RUNNING_INFO (307) reply, as far as this client reads it."""

    properties: Mapping[str, str]
    queues: Mapping[MessageQueue, Mapping[str, Any]]
    subscriptions: tuple[str, ...]

    @classmethod
    @_body_decoder
    def decode(cls, body: bytes) -> RunningInfo:
        obj = _object(body, "running info")
        props = obj.get("properties", {})
        subs = obj.get("subscriptionSet", [])
        if not isinstance(props, Mapping) or not isinstance(subs, list):
            raise ProtocolError("bad-body", "running info has bad properties or subscriptions")
        return cls(
            properties={str(k): str(v) for k, v in props.items()},
            queues=_queue_map(obj.get("mqTable", {}), "mqTable"),
            subscriptions=tuple(sorted(_field(s, "topic", str) for s in subs)),
        )


@attrs.frozen(kw_only=True)
class ConsumeDirectlyResult:
    """CONSUME_MESSAGE_DIRECTLY (309) reply."""

    result: str
    remark: str
    spent_ms: int
    order: bool

    @classmethod
    @_body_decoder
    def decode(cls, body: bytes) -> ConsumeDirectlyResult:
        obj = _object(body, "consume-directly result")
        return cls(
            result=_field(obj, "consumeResult", str),
            remark=_field(obj, "remark", str, "") or "",
            spent_ms=_field(obj, "spentTimeMills", int, 0),
            order=bool(obj.get("order", False)),
        )


@_body_decoder
def decode_topic_list(body: bytes) -> list[str]:
    """GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206) reply: ``{"topicList": [...]}``, sorted."""
    topics = _object(body, "topic list").get("topicList", [])
    if not isinstance(topics, list) or not all(isinstance(t, str) for t in topics):
        raise ProtocolError("bad-body", "topicList is not a list of names")
    return sorted(topics)
