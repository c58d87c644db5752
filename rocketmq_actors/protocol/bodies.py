"""Typed views of the JSON bodies the NameServer returns (route data, cluster info)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from . import jsonlax
from .errors import ProtocolError

__all__ = ["BrokerData", "ClusterInfo", "QueueData", "TopicRouteData"]

PERM_READ = 0x4
PERM_WRITE = 0x2
MASTER_ID = 0


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
            if not isinstance(addr, str):
                raise ProtocolError("bad-body", f"broker address {addr!r} is not a string")
            addrs[broker_id] = addr
        return cls(
            cluster=_field(obj, "cluster", str, ""),
            broker_name=_field(obj, "brokerName", str),
            broker_addrs=addrs,
        )


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
            read_queue_nums=_field(obj, "readQueueNums", int),
            write_queue_nums=_field(obj, "writeQueueNums", int),
            perm=_field(obj, "perm", int),
            topic_sys_flag=sys_flag if isinstance(sys_flag, int) else 0,
        )


@attrs.frozen
class TopicRouteData:
    queue_datas: tuple[QueueData, ...]
    broker_datas: tuple[BrokerData, ...]
    order_topic_conf: str | None = None

    @classmethod
    def decode(cls, body: bytes) -> TopicRouteData:
        obj = jsonlax.loads(body)
        if not isinstance(obj, Mapping):
            raise ProtocolError("bad-body", "TopicRouteData is not an object")
        queues = _field(obj, "queueDatas", list, [])
        brokers = _field(obj, "brokerDatas", list, [])
        conf = obj.get("orderTopicConf")
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
