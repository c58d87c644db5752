"""Blocking one-shot remoting requests, for the launcher's readiness checks and for scripts.

This is deliberately tiny: one TCP connection per call, one request, one response. Real client
traffic goes through the async runtime.
"""

from __future__ import annotations

import itertools
import socket
import time

from rocketmq_actors.protocol.bodies import ClusterInfo, TopicRouteData
from rocketmq_actors.protocol.codes import RequestCode, ResponseCode, SerializeType
from rocketmq_actors.protocol.command import RemotingCommand
from rocketmq_actors.protocol.framing import FrameDecoder
from rocketmq_actors.runtime.connection import split_addr

__all__ = ["ProbeError", "cluster_info", "request", "topic_route"]

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
