"""The network-namespace helpers clean up after themselves, also when the test fails, and
their faults do what they say (fast: no broker, a TCP listener or a UDP counter inside the
namespace)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest
import structlog

from . import netns
from .conftest import FULL_ENV
from .netns import Namespace, NetnsUnavailable, VethLink, leftovers, nft_unavailable

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

# UDP, stdlib only: COUNT binds argv[1]:argv[2], prints "ready", counts the distinct datagrams
# until the first b"end" and prints how many; SEND sends argv[3] numbered datagrams to
# argv[1]:argv[2], then b"end" 100 times (under 20 % loss one of them arrives)
COUNT = (
    "import socket,sys\n"
    "s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\n"
    "s.setsockopt(socket.SOL_SOCKET,33,1<<23)\n"  # SO_RCVBUFFORCE (root): room for all
    "s.bind((sys.argv[1],int(sys.argv[2]))); s.settimeout(30); print('ready',flush=True)\n"
    "got=set()\n"
    "while (d:=s.recv(64))!=b'end': got.add(d)\n"
    "print(len(got),flush=True)\n"
)
SEND = (
    "import socket,sys\n"
    "s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM); a=(sys.argv[1],int(sys.argv[2]))\n"
    "for i in range(int(sys.argv[3])): s.sendto(b'%d'%i,a)\n"
    "for _ in range(100): s.sendto(b'end',a)\n"
)
DATAGRAMS = 500


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


@pytest.fixture
def nft_reason() -> str | None:
    """Why nft's loss cannot work here, or None (installed first under make chaos only)."""
    return nft_unavailable(install=os.environ.get(FULL_ENV) == "full")


def _python(*argv: str, netns: str | None = None) -> list[str]:
    return [*(["ip", "netns", "exec", netns] if netns else []), sys.executable, *argv]


def _mac(dev: str, netns: str | None) -> str:
    shown = subprocess.run(
        ["ip", *(["-netns", netns] if netns else []), "-o", "link", "show", "dev", dev],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    return shown.split("link/ether ", 1)[1].split()[0]


def _pin_neighbours(namespace: Namespace, link: VethLink) -> None:
    """Each end knows the other's MAC for good: no ARP. (Once 64.6 % of a burst was lost
    inward on a loaded machine: while ARP, itself lossy, resolved the neighbour, the kernel
    held only the first ~177 datagrams of the burst and dropped the rest.)"""
    ns_mac, root_mac = _mac(link.ns_dev, namespace.name), _mac(link.root_dev, None)
    for inside, ip, mac, dev in (
        (None, link.ns_ip, ns_mac, link.root_dev),
        (namespace.name, link.root_ip, root_mac, link.ns_dev),
    ):
        subprocess.run(
            ["ip", *(["-netns", inside] if inside else []), "neigh", "replace", ip,
             "lladdr", mac, "dev", dev, "nud", "permanent"],
            check=True,
        )  # fmt: skip


def _delivered(namespace: Namespace, link: VethLink, *, inward: bool) -> int:
    """How many of DATAGRAMS numbered datagrams arrive across ``link``: from the root
    namespace into the namespace (``inward``), or the other way."""
    to = link.ns_ip if inward else link.root_ip
    inside, outside = (namespace.name, None) if inward else (None, namespace.name)
    count = _python("-c", COUNT, to, str(PORT), netns=inside)
    counter = subprocess.Popen(count, stdout=subprocess.PIPE, text=True)
    try:
        assert counter.stdout is not None and counter.stdout.readline() == "ready\n"
        send = _python("-c", SEND, to, str(PORT), str(DATAGRAMS), netns=outside)
        subprocess.run(send, check=True, timeout=30)
        out, _ = counter.communicate(timeout=30)
        return int(out)
    finally:
        counter.kill()
        counter.wait()


def test_loss_drops_about_the_share_asked_each_way(
    namespace: Namespace, nft_reason: str | None
) -> None:
    """A 20 % rule drops about a fifth of the datagrams each way (500 each: the bounds, 10
    to 30 %, are more than five standard deviations wide), none before or once cleared; the
    root-namespace table is seen by leftovers() while it exists."""
    if nft_reason is not None:
        pytest.skip(nft_reason)
    link = namespace.add_link()
    _pin_neighbours(namespace, link)
    namespace.loss(link, 20)
    assert f"nft table netdev {namespace.table}" in leftovers([namespace.name])
    dropped = {
        way: 1 - _delivered(namespace, link, inward=way == "inward") / DATAGRAMS
        for way in ("inward", "outward")
    }
    shares = {way: f"{share:.1%}" for way, share in dropped.items()}
    structlog.get_logger("tests.chaos").info("chaos.netns.loss_helper", rule="20 %", **shares)
    assert all(0.10 <= share <= 0.30 for share in dropped.values()), dropped
    namespace.clear_loss(link)
    assert _delivered(namespace, link, inward=True) == DATAGRAMS


def test_loss_is_removed_when_the_test_fails(nft_reason: str | None) -> None:
    if nft_reason is not None:
        pytest.skip(nft_reason)
    name = ""
    with pytest.raises(RuntimeError), Namespace() as ns:
        name = ns.name
        ns.loss(ns.add_link(), 10)
        assert f"nft table netdev {ns.table}" in leftovers([name])
        raise RuntimeError("the test failed")
    assert leftovers([name]) == []


def test_install_nft_says_why_apt_get_could_not(monkeypatch: pytest.MonkeyPatch) -> None:
    """No nft, and apt-get install fails before and after an update: the reason is apt's."""
    calls: list[list[str]] = []

    def run(argv: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        calls.append(argv)
        failed = argv[1] == "install"
        err = "E: Unable to locate package nftables\n" if failed else ""
        return subprocess.CompletedProcess(argv, 100 if failed else 0, "", err)

    monkeypatch.setattr(shutil, "which", lambda cmd: None if cmd == "nft" else cmd)
    monkeypatch.setattr(subprocess, "run", run)
    why = netns.install_nft.__wrapped__()
    assert [argv[1] for argv in calls] == ["install", "update", "install"]
    assert why is not None and why.endswith("Unable to locate package nftables")
