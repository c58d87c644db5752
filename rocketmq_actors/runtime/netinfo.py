"""This host's address for client ids and message ids, found without sending any packet."""

from __future__ import annotations

import functools
import socket

__all__ = ["local_ipv4"]


@functools.cache
def local_ipv4() -> str:
    """The address the host name resolves to (usually from /etc/hosts), else 127.0.0.1."""
    try:
        addr = socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"
    return addr if addr.count(".") == 3 else "127.0.0.1"
