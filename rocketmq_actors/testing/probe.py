"""Blocking one-shot remoting requests, for the launcher's readiness checks and for scripts.

This is deliberately tiny: one TCP connection per call, one request, one response. Real client
traffic goes through the async runtime.
"""

from __future__ import annotations

import itertools
import json
import socket
import time

import attrs

from rocketmq_actors.protocol.bodies import ClusterInfo, TopicRouteData
from rocketmq_actors.protocol.codes import RequestCode, ResponseCode, SerializeType
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.protocol.framing import FrameDecoder
from rocketmq_actors.runtime.connection import split_addr

__all__ = [
    "ProbeError",
    "ReplicaInfo",
    "cluster_info",
    "register_broker_now",
    "replica_info",
    "request",
    "topic_route",
]

#: RequestCode.CONTROLLER_GET_REPLICA_INFO (5.x controller; a test-only request, so it lives
#: here rather than in protocol/codes.py)
CONTROLLER_GET_REPLICA_INFO = 1004

#: RequestCode.UPDATE_BROKER_CONFIG (AdminBrokerProcessor.updateBrokerConfig; only the launcher
#: sends it)
UPDATE_BROKER_CONFIG = 25

_opaque = itertools.count(1)


class ProbeError(Exception):
    """The server could not be reached or answered with an error code."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


def request(addr: str, cmd: RemotingCommand, timeout: float = 3.0) -> RemotingCommand:
    """Send ``cmd`` to ``addr`` and return the response with the same opaque."""
    cmd.opaque = next(_opaque) & 0x7FFFFFFF
    deadline = time.monotonic() + timeout
    try:
        with socket.create_connection(split_addr(addr), timeout=timeout) as sock:
            sock.sendall(cmd.encode())
            decoder = FrameDecoder()
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise ProbeError(f"{addr}: no response within {timeout}s")
                sock.settimeout(remaining)
                chunk = sock.recv(65536)
                if not chunk:
                    raise ProbeError(f"{addr}: connection closed before the response")
                for reply in decoder.feed(chunk):
                    if reply.is_response and reply.opaque == cmd.opaque:
                        return reply
    except OSError as exc:
        raise ProbeError(f"{addr}: {exc}") from exc


def cluster_info(
    namesrv: str, timeout: float = 3.0, serialize_type: SerializeType = SerializeType.JSON
) -> ClusterInfo:
    cmd = RemotingCommand.request(
        RequestCode.GET_BROKER_CLUSTER_INFO, serialize_type=serialize_type
    )
    reply = request(namesrv, cmd, timeout)
    if reply.code != ResponseCode.SUCCESS:
        raise ProbeError(f"cluster info: code {reply.code} {reply.remark or ''}", reply.code)
    return ClusterInfo.decode(reply.body)


def topic_route(namesrv: str, topic: str, timeout: float = 3.0) -> TopicRouteData:
    cmd = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
    reply = request(namesrv, cmd, timeout)
    if reply.code != ResponseCode.SUCCESS:
        raise ProbeError(f"route of {topic!r}: code {reply.code} {reply.remark or ''}", reply.code)
    return TopicRouteData.decode(reply.body)


def register_broker_now(broker: str, permission: str, timeout: float = 3.0) -> None:
    """Make a 5.x broker register with its NameServers now: an UPDATE_BROKER_CONFIG that sets
    ``brokerPermission`` (to its current value) makes the broker call ``registerBrokerAll``
    before it answers. A 5.x broker's own registration at start-up finds no NameServer
    "available" yet (NettyRemotingClient scans them asynchronously) and is skipped; the next
    comes from a scheduled task 10 s later. Raises ProbeError when the broker refuses
    (an ACL broker without credentials) or cannot be reached."""
    body = f"brokerPermission={permission}\n".encode()
    reply = request(broker, RemotingCommand.request(UPDATE_BROKER_CONFIG, body=body), timeout)
    if reply.code != ResponseCode.SUCCESS:
        raise ProbeError(
            f"update broker config: code {reply.code} {reply.remark or ''}", reply.code
        )


@attrs.frozen
class ReplicaInfo:
    """A broker set as the controller sees it: its master and its SyncStateSet (the broker
    ids that have every acknowledged message, hence may be elected)."""

    master_addr: str | None
    master_id: int | None
    master_epoch: int | None
    sync_state_set: frozenset[int]


def _int_or_none(value: str | None) -> int | None:
    return None if value is None or value in ("", "null") else int(value)


def replica_info(controller: str, broker_name: str, timeout: float = 3.0) -> ReplicaInfo:
    """CONTROLLER_GET_REPLICA_INFO (ControllerRequestProcessor): header
    GetReplicaInfoResponseHeader, body SyncStateSet JSON."""
    cmd = RemotingCommand.request(CONTROLLER_GET_REPLICA_INFO, {"brokerName": broker_name})
    reply = request(controller, cmd, timeout)
    if reply.code != ResponseCode.SUCCESS:
        raise ProbeError(
            f"replica info of {broker_name!r}: code {reply.code} {reply.remark or ''}", reply.code
        )
    ext = reply.ext_fields
    body = json.loads(reply.body) if reply.body else {}
    return ReplicaInfo(
        master_addr=ext.get("masterAddress") or None,
        master_id=_int_or_none(ext.get("masterBrokerId")),
        master_epoch=_int_or_none(ext.get("masterEpoch")),
        sync_state_set=frozenset(int(i) for i in body.get("syncStateSet") or ()),
    )
