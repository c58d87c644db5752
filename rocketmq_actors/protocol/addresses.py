"""``host:port`` addresses as RocketMQ writes them (``[v6]:port`` for IPv6)."""

from __future__ import annotations

from .errors import ProtocolError

__all__ = ["parse_addr"]


def parse_addr(addr: object) -> tuple[str, int]:
    """``(host, port)`` of ``addr``; :class:`ProtocolError` ``bad-address`` unless it is a
    non-empty host and a port in 1..65535."""
    if not isinstance(addr, str):
        raise ProtocolError("bad-address", f"{addr!r} is not a string")
    host, sep, port = addr.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536 or len(addr) > 300:
        raise ProtocolError("bad-address", f"{addr[:80]!r} is not host:port")
    return host, int(port)
