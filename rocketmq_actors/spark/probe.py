"""The NameServer probe made once when a write is planned (on the driver, before any task
runs): a cluster that cannot be reached fails the write there, with the addresses and why,
instead of every task failing after its send timeouts and retries.

It opens a TCP connection (and the TLS handshake, with ``tls``) to each address in turn until
one answers, within ``timeout`` seconds in all. Plain sockets, no event loop: the caller may be
a notebook whose thread already runs one.
"""

from __future__ import annotations

import socket
import ssl
import time

from rocketmq_actors.cluster.namesrv import parse_namesrv
from rocketmq_actors.runtime.connection import split_addr

from .options import OptionError

__all__ = ["PROBE_TIMEOUT", "probe_namesrv"]

PROBE_TIMEOUT = 3.0  # seconds for all the addresses together


def probe_namesrv(
    namesrv: str, *, timeout: float = PROBE_TIMEOUT, ssl_context: ssl.SSLContext | None = None
) -> str:
    """The first address of ``namesrv`` that accepts a connection; :class:`OptionError`
    naming every address and its error when none does within ``timeout``."""
    deadline = time.monotonic() + timeout
    failures: list[str] = []
    for addr in parse_namesrv(namesrv):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            failures.append(f"{addr}: not tried (the {timeout:g} s were spent)")
            continue
        host, port = split_addr(addr)
        try:
            with socket.create_connection((host, port), timeout=remaining) as sock:
                if ssl_context is not None:
                    sock.settimeout(max(deadline - time.monotonic(), 0.001))
                    ssl_context.wrap_socket(sock, server_hostname=host).close()
        except OSError as exc:  # refused, unreachable, timed out, TLS handshake (SSLError)
            failures.append(f"{addr}: {exc.strerror or repr(exc)}")
            continue
        return addr
    raise OptionError(
        f"option 'namesrv': no NameServer of {namesrv!r} can be reached from the driver "
        f"({'; '.join(failures)}); is the cluster up?"
    )
