"""Network namespaces and veth pairs for the chaos tests, with iproute2 (and nftables for loss).

A :class:`Namespace` is one ``ip netns`` with veth pairs to the root namespace, each pair a
``10.231.X.0/30`` of its own (root end ``.1``, namespace end ``.2``). Faults are cuts of one
pair: ``blackhole`` (a route inside the namespace drops every packet to the root end: the
peer goes silent, as behind a real partition), ``link_down`` (the namespace end down: the
wire is cut, silently too), ``unreachable`` (a root-namespace route that refuses: the
kernel tells the sender at once); ``loss`` (a share of the packets dropped each way, with
nftables: :func:`nft_unavailable` says whether it works here), and ``tc netem`` on the root
end when the kernel has it.
Everything is created by the test and removed by :meth:`Namespace.close` (deleting the
namespace deletes its veth ends, and with them their root peers; the one root-namespace
nftables table of a namespace is deleted by name), even when a test fails.
"""

from __future__ import annotations

import functools
import ipaddress
import os
import secrets
import shutil
import subprocess
from collections.abc import Sequence

import attrs

__all__ = [
    "PREFIX",
    "Namespace",
    "NetnsUnavailable",
    "VethLink",
    "leftovers",
    "netem_unavailable",
    "nft_unavailable",
]

#: every namespace and veth device these helpers create starts with this (device names have
#: at most 15 characters)
PREFIX = "rmqc"
SUBNETS = ipaddress.ip_network("10.231.0.0/16")


class NetnsUnavailable(Exception):
    """The machine cannot create network namespaces or veth pairs (not root, no iproute2)."""


def _ip(*args: str, netns: str | None = None) -> str:
    argv = ["ip", *(["netns", "exec", netns, "ip"] if netns else []), *args]
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise subprocess.CalledProcessError(proc.returncode, argv, proc.stdout, proc.stderr)
    return proc.stdout


def _used_subnets() -> set[int]:
    used = set()
    for line in _ip("-o", "-4", "addr").splitlines():
        for word in line.split():
            if word.startswith("10.231."):
                used.add(int(word.split(".")[2]))
    return used


@attrs.frozen
class VethLink:
    """One veth pair: ``root_dev``/``root_ip`` in the root namespace, ``ns_dev``/``ns_ip``
    inside the namespace."""

    root_dev: str
    ns_dev: str
    root_ip: str
    ns_ip: str


class Namespace:
    """``with Namespace() as ns: link = ns.add_link()``; removed with everything in it."""

    def __init__(self) -> None:
        self.tag = secrets.token_hex(3)
        self.name = f"{PREFIX}-{os.getpid()}-{self.tag}"
        self.links: list[VethLink] = []
        self._created = False
        self._root_table = False  # the root-namespace half of `loss` may exist

    def __enter__(self) -> Namespace:
        try:
            _ip("netns", "add", self.name)
        except (OSError, subprocess.CalledProcessError) as exc:
            raise NetnsUnavailable(f"ip netns add failed: {_reason(exc)}") from exc
        self._created = True
        try:
            _ip("link", "set", "lo", "up", netns=self.name)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add_link(self) -> VethLink:
        """A new veth pair between the root namespace and this one, on a free /30."""
        third = next(i for i in range(256) if i not in _used_subnets())
        index = len(self.links)
        link = VethLink(
            root_dev=f"{PREFIX}{self.tag}r{index}",
            ns_dev=f"{PREFIX}{self.tag}n{index}",
            root_ip=f"10.231.{third}.1",
            ns_ip=f"10.231.{third}.2",
        )
        try:
            _ip("link", "add", link.root_dev, "type", "veth", "peer", "name", link.ns_dev)
        except (OSError, subprocess.CalledProcessError) as exc:
            raise NetnsUnavailable(f"veth pair: {_reason(exc)}") from exc
        self.links.append(link)
        _ip("link", "set", link.ns_dev, "netns", self.name)
        _ip("addr", "add", f"{link.root_ip}/30", "dev", link.root_dev)
        _ip("link", "set", link.root_dev, "up")
        _ip("addr", "add", f"{link.ns_ip}/30", "dev", link.ns_dev, netns=self.name)
        _ip("link", "set", link.ns_dev, "up", netns=self.name)
        return link

    # ---- faults ------------------------------------------------------------------------------

    def blackhole(self, link: VethLink) -> None:
        """Silence: the namespace drops everything it sends to ``link``'s root end."""
        _ip("route", "add", "blackhole", f"{link.root_ip}/32", netns=self.name)

    def unblackhole(self, link: VethLink) -> None:
        _ip("route", "del", "blackhole", f"{link.root_ip}/32", netns=self.name)

    def link_down(self, link: VethLink) -> None:
        """The namespace end down: the root end loses its carrier and what is sent into it
        is lost. (Not the root end: its connected route would go with it, and packets to the
        namespace would follow the default route out of the machine.)"""
        _ip("link", "set", link.ns_dev, "down", netns=self.name)

    def link_up(self, link: VethLink) -> None:
        _ip("link", "set", link.ns_dev, "up", netns=self.name)

    def unreachable(self, link: VethLink) -> None:
        """Refusal: the root namespace's route to the namespace end says unreachable, so a
        connect from here fails at once (EHOSTUNREACH) - the client is told."""
        _ip("route", "add", "unreachable", f"{link.ns_ip}/32")

    def reachable(self, link: VethLink) -> None:
        _ip("route", "del", "unreachable", f"{link.ns_ip}/32")

    def netem(self, link: VethLink, *params: str) -> None:
        """``tc qdisc replace dev <root end> root netem <params>`` (egress towards the
        namespace); :func:`netem_unavailable` says first whether the kernel has netem."""
        _tc("qdisc", "replace", "dev", link.root_dev, "root", "netem", *params)

    def clear_netem(self, link: VethLink) -> None:
        _tc("qdisc", "del", "dev", link.root_dev, "root")

    @property
    def table(self) -> str:
        """The name of this namespace's nftables tables (family ``netdev``): one inside the
        namespace, one in the root namespace."""
        return f"{PREFIX}{self.tag}"

    def loss(self, link: VethLink, percent: float) -> None:
        """Drop ``percent`` % of the packets crossing ``link``, each way, at random (nftables
        ``numgen random mod 10000 < percent * 100 drop``), replacing the link's previous loss.

        A lossy wire: each end drops on its ingress what arrives from the other, so no
        sender is told (a drop on the sender's output hook fails its transmit, which TCP
        retries on a timer, not as a loss). So the chain of the namespace end is in a table
        inside the namespace, and the chain of the root end in a table of the same name in
        the root namespace, deleted by :meth:`close`. :func:`nft_unavailable` says first
        whether nft works here."""
        share = round(percent * 100)
        if not 0 <= share <= 10000:
            raise ValueError(f"loss of {percent} %: not between 0 and 100")
        _nft(self._loss_script(link.ns_dev, share), netns=self.name)
        self._root_table = True  # from the first try on: close() deletes what it made
        _nft(self._loss_script(link.root_dev, share))

    def clear_loss(self, link: VethLink) -> None:
        for netns, dev in ((self.name, link.ns_dev), (None, link.root_dev)):
            _nft(f"delete chain netdev {self.table} {dev}\n", netns=netns)

    def _loss_script(self, dev: str, share: int) -> str:
        hook = f'type filter hook ingress device "{dev}" priority 0; policy accept;'
        return (
            f"add table netdev {self.table}\n"
            f"add chain netdev {self.table} {dev} {{ {hook} }}\n"
            f"flush chain netdev {self.table} {dev}\n"
            f"add rule netdev {self.table} {dev} numgen random mod 10000 < {share} drop\n"
        )

    # ---- teardown ----------------------------------------------------------------------------

    def close(self) -> None:
        """Delete the namespace (its veth ends and its nftables table go with it, and the
        ends' root peers with them); then make sure no root end, route or table of ours is
        left."""
        if self._created:
            subprocess.run(["ip", "netns", "del", self.name], capture_output=True, check=False)
            self._created = False
        if self._root_table:
            argv = ["nft", "delete", "table", "netdev", self.table]
            subprocess.run(argv, capture_output=True, check=False)
            self._root_table = False
        for link in self.links:
            subprocess.run(["ip", "link", "del", link.root_dev], capture_output=True, check=False)
            subprocess.run(
                ["ip", "route", "del", "unreachable", f"{link.ns_ip}/32"],
                capture_output=True,
                check=False,
            )
        self.links = []


def _tc(*args: str) -> None:
    proc = subprocess.run(["tc", *args], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise subprocess.CalledProcessError(proc.returncode, ["tc", *args], "", proc.stderr)


def _nft(script: str, netns: str | None = None) -> None:
    """``nft -f -`` with ``script``, inside ``netns`` when given."""
    argv = [*(["ip", "netns", "exec", netns] if netns else []), "nft", "-f", "-"]
    proc = subprocess.run(argv, input=script, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise subprocess.CalledProcessError(proc.returncode, argv, proc.stdout, proc.stderr)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, subprocess.CalledProcessError):
        return (exc.stderr or "").strip() or f"exit {exc.returncode}"
    return str(exc)


def netem_unavailable() -> str | None:
    """None when ``tc ... netem`` works here, else the kernel's answer (e.g. "Specified qdisc
    kind is unknown." without sch_netem), probed on a veth pair of a scratch namespace."""
    try:
        with Namespace() as ns:
            link = ns.add_link()
            try:
                ns.netem(link, "delay", "1ms")
            except subprocess.CalledProcessError as exc:
                return f"tc qdisc add ... netem: {_reason(exc)}"
            except OSError as exc:
                return f"tc: {exc}"
    except NetnsUnavailable as exc:
        return str(exc)
    return None


#: how long one apt-get step may take (a download on a slow mirror; no network fails sooner)
APT_TIMEOUT = 600.0


@functools.cache
def install_nft() -> str | None:
    """``apt-get install -y nftables`` (after an ``apt-get update`` if that alone fails),
    tried once per process and only as root with apt-get; None when ``nft`` is there
    after, else why not."""
    if shutil.which("nft") is not None:
        return None
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return "nft (nftables) is not installed, and this is not root with apt-get to install it"
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    install = ["apt-get", "install", "-y", "nftables"]
    for steps in ([install], [["apt-get", "update"], install]):
        why = None
        for argv in steps:
            try:
                proc = subprocess.run(
                    argv, capture_output=True, text=True, env=env, timeout=APT_TIMEOUT, check=False
                )
            except (OSError, subprocess.TimeoutExpired) as exc:
                why = f"{' '.join(argv)}: {exc}"
                break
            if proc.returncode != 0:
                tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["(no output)"]
                why = f"{' '.join(argv)} failed (exit {proc.returncode}): {tail[0]}"
                break
        if why is None and shutil.which("nft") is not None:
            return None
    return f"nft (nftables) is not installed and could not be: {why or 'no nft after apt-get'}"


def nft_unavailable(*, install: bool = False) -> str | None:
    """None when :meth:`Namespace.loss` works here, else why not: nft missing (with
    ``install``, after :func:`install_nft` tried), no namespaces, or the kernel's answer
    (e.g. without nf_tables, or netdev tables, or numgen), probed on a veth pair of a
    scratch namespace."""
    if shutil.which("nft") is None:
        why = install_nft() if install else "nft (nftables) is not installed"
        if why is not None:
            return why
    try:
        with Namespace() as ns:
            link = ns.add_link()
            try:
                ns.loss(link, 50)
                ns.clear_loss(link)
            except subprocess.CalledProcessError as exc:
                return f"nft ... numgen random ... drop: {_reason(exc)}"
            except OSError as exc:
                return f"nft: {exc}"
    except NetnsUnavailable as exc:
        return str(exc)
    return None


def _root_tables() -> list[str]:
    """The names of the root namespace's netdev tables (none without nft)."""
    if shutil.which("nft") is None:
        return []
    proc = subprocess.run(
        ["nft", "list", "tables", "netdev"], capture_output=True, text=True, check=False
    )
    return [line.split()[-1] for line in proc.stdout.splitlines() if line.startswith("table")]


def leftovers(names: Sequence[str] = ()) -> list[str]:
    """The named namespaces (default: every one of this process), their root-namespace veth
    ends and their root-namespace nftables tables that are still present: must be none
    after a teardown."""
    mine = f"{PREFIX}-{os.getpid()}-"
    present = [line.split()[0] for line in _ip("netns", "list").splitlines() if line.strip()]
    found = [n for n in present if (n in names if names else n.startswith(mine))]
    tags = {name.rsplit("-", 1)[-1] for name in (names or found)}
    for line in _ip("-o", "link").splitlines():
        dev = line.split(":")[1].strip().split("@")[0]
        if dev.startswith(PREFIX) and dev[len(PREFIX) : len(PREFIX) + 6] in tags:
            found.append(dev)
    found += [f"nft table netdev {t}" for t in _root_tables() if t[len(PREFIX) :] in tags]
    return found
