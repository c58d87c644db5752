"""Ours against the other Python clients of RocketMQ, same broker, same sizes, taking turns.

Not part of ``make bench`` and not published: it predates the rules of ``benchmarks.rotation``.

    python -m benchmarks.peers [--pyrocketmq-source DIR] [--windows 4] [--seconds 3]

Peers:

- ``rocketmq_python_client``: the official ``rocketmq-python-client`` (PyPI), a gRPC client of
  the RocketMQ 5 Proxy: a 5.3.3 cluster with the launcher's Proxy (``LocalProxy``) in front;
  ours speaks remoting to the same broker. The Proxy's JVM runs on the same machine, so the
  peer's figures carry that hop (it is how that client reaches a broker).
- ``pyrocketmq``: tt67wq/pyrocketmq, a pure-Python asyncio client of the remoting protocol
  for 4.x brokers (its README: 5.x is not supported), so both run on a local RocketMQ 4.9.7.
  It is not on PyPI (the ``pyrocketmq`` there is another project, a JPype wrapper of the Java
  client): give a checkout of it with ``--pyrocketmq-source`` (or ``$PYROCKETMQ_SOURCE``);
  without one the peer is skipped, and the results file and this command say so.

Each peer is installed into a scratch virtualenv that is removed afterwards (its code never
enters this repository or our environment) and driven by ``benchmarks/peer_<name>.py`` in that
virtualenv, over the same stdin protocol as the Java side of ``benchmarks/paired.py``: (a) sync
sends, one in flight, (b) pipelined 1 KiB sends with ``--concurrency`` in flight, in paired
windows, order flipped every pair; (d) push-consume drains of one backlog (each side a fresh
group from the first offset, ABBA order), counted from the first message. CPU per message is
the client process's (every thread).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from . import compare, consumer, paired
from .common import RESULTS, last_json, run_main, write_results

HERE = Path(__file__).resolve().parent
PEER_MODES = ("sync", "pipelined")
PYTHON_CLIENT = "rocketmq-python-client==5.1.2"  # the newest on PyPI when this was written
#: what bounds each peer, read from its code: a reader of its figures needs it beside them
LIMITS = {
    "pyrocketmq": (
        "its async producer keeps a pool of one connection per broker (`connection_pool_size`"
        " 1) and holds it for the whole of a request, other senders polling for it every"
        " 100 ms, so one send is in flight whatever the number of senders: (b) measures that"
        " pool, and its windows outlast the length asked for (a window ends when its last"
        " send settles); its sends that wait too long fail with `MessageSendError`"
    ),
    "rocketmq_python_client": (
        "a gRPC client of the RocketMQ 5 Proxy: its figures include the Proxy's hop, and the"
        " Proxy's JVM shares the machine's cores with both clients (ours speaks remoting to"
        " the broker)"
    ),
}


def defer_annotations(package: Path) -> int:
    """Make every module of ``package`` defer its annotations (``from __future__ import
    annotations`` first), as Python 3.14 does by default: pyrocketmq targets 3.14, and some of
    its signatures (``threading.RLock | None``) fail when evaluated on 3.11-3.13. Nothing
    else in the code changes. Returns how many modules were changed."""
    changed = 0
    for module in sorted(package.rglob("*.py")):
        text = module.read_text(encoding="utf-8")
        if "from __future__ import annotations" not in text:
            module.write_text("from __future__ import annotations\n" + text, encoding="utf-8")
            changed += 1
    return changed


class PeerUnavailable(Exception):
    """A peer that cannot be measured here; the message says why (it is recorded)."""


class ScratchVenv:
    """A virtualenv in a temporary directory, removed at exit; ``python`` is its interpreter."""

    def __init__(self, name: str) -> None:
        self.root = Path(tempfile.mkdtemp(prefix=f"rocketmq-actors-peer-{name}-"))
        self.python = str(self.root / "venv" / "bin" / "python")
        made = subprocess.run(
            [sys.executable, "-m", "venv", str(self.root / "venv")],
            check=False, capture_output=True, text=True,
        )  # fmt: skip
        if made.returncode != 0:
            self.close()
            last = (made.stderr.strip().splitlines() or ["?"])[-1]
            raise PeerUnavailable(f"no virtualenv for {name}: {last}")

    def install(self, *requirements: str) -> None:
        """:class:`PeerUnavailable` (with pip's last words) when pip cannot install them:
        no registry reachable, a requirement that does not resolve."""
        done = subprocess.run(
            [self.python, "-m", "pip", "install", "-q", "--disable-pip-version-check",
             "--no-cache-dir", *requirements],  # (nothing left in ~/.cache)
            check=False, capture_output=True, text=True,
        )  # fmt: skip
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["?"])[-1]
            raise PeerUnavailable(f"pip could not install {' '.join(requirements)}: {last}")

    def site_packages(self) -> Path:
        done = subprocess.run(
            [self.python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            check=True, capture_output=True, text=True,
        )  # fmt: skip
        return Path(done.stdout.strip())

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def _revision(source: Path) -> str:
    done = subprocess.run(
        ["git", "-C", str(source), "rev-parse", "--short", "HEAD"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    return done.stdout.strip() if done.returncode == 0 else "unknown (not a git checkout)"


class Peer:
    """One peer's program (``benchmarks/peer_<name>.py``) on ``python`` (its scratch
    virtualenv), talking to ``address`` (the NameServer's, or the Proxy's for a gRPC client);
    each run in a scratch directory that is its home too (the gRPC client logs under
    ``~/logs``), removed afterwards."""

    def __init__(self, name: str, python: str, address: str) -> None:
        self.name, self.python, self.address = name, python, address
        self.program = ["-m", f"benchmarks.peer_{name}"]

    def _scratch(self) -> tuple[Path, dict[str, str]]:
        scratch = Path(tempfile.mkdtemp(prefix=f"rocketmq-actors-peer-{self.name}-run-"))
        # this tree for benchmarks.peer_protocol (the package imports nothing else of ours)
        return scratch, {**os.environ, "HOME": str(scratch), "PYTHONPATH": str(HERE.parent)}

    def side(self, namesrv: str, topic: str, warmup: float, concurrency: int) -> paired.LineSide:
        """A :data:`paired.SideFactory`: the program in ``windows`` mode."""
        scratch, env = self._scratch()
        argv = [self.python, *self.program, "windows", self.address, topic, str(warmup),
                str(concurrency)]  # fmt: skip
        return paired.LineSide(f"peer_{self.name}.py", argv, scratch, env)

    def drain(self, topic: str, count: int) -> dict[str, Any]:
        """One drain by the peer's push consumer, a fresh group, in a fresh process."""
        scratch, env = self._scratch()
        try:
            done = subprocess.run(
                [self.python, *self.program, "drain", self.address, topic,
                 f"bench_peer_{self.name}_{time.time_ns()}", str(count)],
                capture_output=True, text=True, timeout=900, check=False, cwd=scratch, env=env,
            )  # fmt: skip
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        if done.returncode != 0:
            raise RuntimeError(
                f"peer_{self.name}.py drain exited {done.returncode}; its stderr ends:\n"
                f"{done.stderr[-2000:]}"
            )
        figures = last_json(done.stdout, f"peer_{self.name}.py drain")
        if figures["messages"] < count:  # (a drain that ends early has no rate to pool)
            raise RuntimeError(f"peer_{self.name}.py drained {figures['messages']} of {count}")
        return figures


def measure(peer: Peer, namesrv: str, args: argparse.Namespace) -> dict[str, Any]:
    """Paths (a) and (b) in paired windows, then (d)."""
    produce = anyio.run(
        paired.paired, namesrv, args.windows, args.seconds, args.warmup, args.concurrency,
        None, PEER_MODES, peer.side, peer.name,
    )  # fmt: skip
    consume = drains(peer, namesrv, args.consume_messages, args.drains)
    return {"windows": args.windows, "window_seconds": args.seconds, "produce": produce,
            "consume": consume}  # fmt: skip


def drains(peer: Peer, namesrv: str, messages: int, rounds: int) -> dict[str, Any]:
    """(d): ``rounds`` drains of one backlog per side, ABBA order; pooled from the first
    message, with each side's CPU per message over the same span."""
    topic = f"bench_peer_consume_{int(time.time())}"
    anyio.run(consumer.prefill, namesrv, topic, messages)
    return compare.drains(namesrv, topic, messages, rounds, peer.name,
                          lambda _namesrv, topic, count: peer.drain(topic, count))  # fmt: skip


def bench_pyrocketmq(source: Path, args: argparse.Namespace) -> dict[str, Any]:
    from rocketmq_actors.testing.cluster import ClusterSpec, LocalCluster

    venv = ScratchVenv("pyrocketmq")
    try:
        venv.install(str(source))
        changed = defer_annotations(venv.site_packages() / "pyrocketmq")
        with LocalCluster(ClusterSpec(version="4.9.7", jit="full")) as cluster:
            peer = Peer("pyrocketmq", venv.python, cluster.namesrv_addr)
            figures = measure(peer, cluster.namesrv_addr, args)
    finally:
        venv.close()
    return {"client": "tt67wq/pyrocketmq", "revision": _revision(source), "broker": "4.9.7",
            "limits": LIMITS["pyrocketmq"], "modules_with_deferred_annotations": changed,
            **figures}  # fmt: skip


def bench_rocketmq_python_client(requirement: str, args: argparse.Namespace) -> dict[str, Any]:
    from rocketmq_actors.testing.cluster import ClusterSpec, LocalCluster
    from rocketmq_actors.testing.proxy import LocalProxy

    venv = ScratchVenv("rocketmq_python_client")
    try:
        venv.install(requirement)
        with (
            LocalCluster(ClusterSpec(version="5.3.3", jit="full")) as cluster,
            LocalProxy(cluster.namesrv_addr, version="5.3.3") as proxy,
        ):
            peer = Peer("rocketmq_python_client", venv.python, proxy.grpc_addr)
            figures = measure(peer, cluster.namesrv_addr, args)
    finally:
        venv.close()
    broker = "5.3.3 through rocketmq-proxy 5.3.3"
    return {"client": requirement, "revision": "PyPI", "broker": broker,
            "limits": LIMITS["rocketmq_python_client"], **figures}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pyrocketmq-source", type=Path,
                        default=os.environ.get("PYROCKETMQ_SOURCE") or None,
                        help="a checkout of github.com/tt67wq/pyrocketmq")  # fmt: skip
    parser.add_argument("--rocketmq-python-client", default=PYTHON_CLIENT,
                        help="the pip requirement of the official client")  # fmt: skip
    parser.add_argument("--skip-rocketmq-python-client", action="store_true")
    parser.add_argument("--windows", type=int, default=4, help="windows per path and side")
    parser.add_argument("--seconds", type=float, default=3.0, help="length of one window")
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--consume-messages", type=int, default=20_000)
    parser.add_argument("--drains", type=int, default=2, help="drains per side")
    parser.add_argument("--out", type=Path, default=RESULTS / "peers.json")
    args = parser.parse_args(argv)
    began = time.monotonic()
    peers: dict[str, Any] = {}

    earlier = json.loads(args.out.read_text()) if args.out.exists() else {}

    def run(name: str, measure: Callable[[], dict[str, Any]]) -> None:
        try:
            peers[name] = {"taken_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                           **measure()}  # fmt: skip
        except PeerUnavailable as exc:
            sys.stderr.write(f"benchmarks.peers: {name} skipped: {exc}\n")
            before = earlier.get(name, {})
            # a run that cannot measure a peer keeps the last figures of it, saying so
            peers[name] = (
                {**before, "not_remeasured": str(exc)}
                if "produce" in before
                else {"skipped": str(exc)}
            )

    def pyrocketmq() -> dict[str, Any]:
        if args.pyrocketmq_source is None:
            raise PeerUnavailable(
                "no checkout of tt67wq/pyrocketmq given (--pyrocketmq-source or "
                "$PYROCKETMQ_SOURCE); it is not on PyPI"
            )
        return bench_pyrocketmq(args.pyrocketmq_source.resolve(), args)

    def python_client() -> dict[str, Any]:
        if args.skip_rocketmq_python_client:
            raise PeerUnavailable("--skip-rocketmq-python-client")
        return bench_rocketmq_python_client(args.rocketmq_python_client, args)

    run("pyrocketmq", pyrocketmq)
    run("rocketmq_python_client", python_client)
    names = ("windows", "seconds", "warmup", "concurrency", "consume_messages", "drains")
    settings = {key: getattr(args, key) for key in names}
    write_results(
        args.out,
        {"settings": {**settings, "took_seconds": round(time.monotonic() - began)}, **peers},
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(run_main(main))
