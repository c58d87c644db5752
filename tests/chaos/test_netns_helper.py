"""The network-namespace helpers clean up after themselves, also when the test fails, and
their faults do what they say (fast: no broker, a TCP listener inside the namespace)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest

from .netns import Namespace, NetnsUnavailable, leftovers

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("ip") is None,
    reason="network namespaces need root and iproute2 (ip)",
)

# a TCP server inside the namespace that answers every connection with b"hi" (stdlib only)
SERVER = (
    "import socket,sys\n"
    "s=socket.socket(); s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1)\n"
    "s.bind(('0.0.0.0',int(sys.argv[1]))); s.listen(); print('ready',flush=True)\n"
    "while True:\n c,_=s.accept(); c.sendall(b'hi'); c.close()\n"
)
PORT = 18181


@pytest.fixture
def namespace() -> Iterator[Namespace]:
    try:
        with Namespace() as ns:
            yield ns
    except NetnsUnavailable as exc:
        pytest.skip(str(exc))
    assert leftovers([ns.name]) == []


def _hello(ip: str) -> str:
    try:
        with socket.create_connection((ip, PORT), timeout=1.0) as sock:
            return sock.recv(2).decode()
    except TimeoutError:
        return "silent"
    except OSError as exc:
        return f"refused: {exc.strerror}"


def test_cuts_and_heals(namespace: Namespace) -> None:
    quiet, cut = namespace.add_link(), namespace.add_link()
    argv = ["ip", "netns", "exec", namespace.name, sys.executable, "-c", SERVER, str(PORT)]
    server = subprocess.Popen(argv, stdout=subprocess.PIPE)
    try:
        assert server.stdout is not None and server.stdout.readline() == b"ready\n"
        assert _hello(cut.ns_ip) == _hello(quiet.ns_ip) == "hi"
        namespace.blackhole(cut)
        assert (_hello(cut.ns_ip), _hello(quiet.ns_ip)) == ("silent", "hi")
        namespace.unblackhole(cut)
        namespace.unreachable(cut)
        assert _hello(cut.ns_ip).startswith("refused")
        namespace.reachable(cut)
        namespace.link_down(cut)
        assert (_hello(cut.ns_ip), _hello(quiet.ns_ip)) == ("silent", "hi")
        namespace.link_up(cut)
        assert _hello(quiet.ns_ip) == "hi"
    finally:
        server.kill()
        server.wait()


def test_everything_is_removed_when_the_test_fails() -> None:
    name = ""
    with pytest.raises(RuntimeError), Namespace() as ns:
        name = ns.name
        link = ns.add_link()
        ns.unreachable(link)  # a root-namespace route: removed too
        assert leftovers([name])
        raise RuntimeError("the test failed")
    assert leftovers([name]) == []
    routes = subprocess.run(["ip", "route"], capture_output=True, text=True, check=True).stdout
    assert link.ns_ip not in routes
