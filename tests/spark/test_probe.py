"""The NameServer probe made when a write is planned: a closed port fails at once, naming it."""

from __future__ import annotations

import socket
import time

import pytest

from rocketmq_actors.spark.options import OptionError
from rocketmq_actors.spark.probe import probe_namesrv
from tests.slack import slack


def closed_port() -> int:
    """A port nothing listens on: bound (so the OS picked a free one), then closed."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_a_listening_address_answers() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        addr = f"127.0.0.1:{server.getsockname()[1]}"
        dead = f"127.0.0.1:{closed_port()}"
        assert probe_namesrv(f"{dead};{addr}") == addr  # the first one that answers


def test_no_reachable_address_is_an_option_error_naming_each() -> None:
    first, second = f"127.0.0.1:{closed_port()}", f"127.0.0.1:{closed_port()}"
    began = time.monotonic()
    with pytest.raises(OptionError, match="option 'namesrv'") as caught:
        probe_namesrv(f"{first};{second}", timeout=2.0)
    # a refused connection does not wait for the timeout
    assert time.monotonic() - began < 1.0 + slack(began)
    assert first in str(caught.value) and second in str(caught.value)
    assert "refused" in str(caught.value).lower()


def test_a_silent_address_takes_at_most_the_timeout() -> None:
    # 192.0.2.0/24 is TEST-NET-1 (RFC 5737): never routed, a connect there hangs or fails
    began = time.monotonic()
    with pytest.raises(OptionError, match=r"192\.0\.2\.1:9876"):
        probe_namesrv("192.0.2.1:9876", timeout=0.3)
    assert time.monotonic() - began < 0.3 + slack(began)
