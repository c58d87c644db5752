"""The harness of ``benchmarks.peers``: a peer's process takes turns with ours over the stdin
protocol, its failures are kept, a peer that dies says why, and a peer that is not given is
reported as skipped. (The peers themselves are not installed here: ``python -m benchmarks.peers``
runs them.)"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest

from benchmarks import consumer, paired, peer_protocol, peers
from benchmarks.nullbroker import NullBroker

# a peer that answers every window with the same made-up figures (its warm-up too)
FAKE_PEER = """\
import json, sys
print("a line of the client's own log", flush=True)
print(json.dumps({"ready": True}), flush=True)
for line in sys.stdin:
    words = line.split()
    if words[0] == "quit":
        break
    if words[0] == "crash":
        sys.stderr.write("the peer's last words\\n")
        raise SystemExit(3)
    print(json.dumps({"mode": words[0], "messages": 10, "failed": 1,
                      "errors": {"TimeoutError": 1}, "seconds": 0.5,
                      "latencies_us": [100, 300]}), flush=True)
"""


def _fake_side(tmp_path: Path) -> paired.SideFactory:
    program = tmp_path / "fake_peer.py"
    program.write_text(FAKE_PEER)

    def start(namesrv: str, topic: str, warmup: float, concurrency: int) -> paired.LineSide:
        scratch = tmp_path / "scratch"
        scratch.mkdir(exist_ok=True)
        return paired.LineSide("fake_peer.py", [sys.executable, str(program)], scratch)

    return start


@pytest.mark.integration
@pytest.mark.once
def test_windows_take_turns_with_a_peer_and_keep_its_failures(tmp_path: Path) -> None:
    with NullBroker(queues=2, backlog=0, pull_batch=4, hold_ms=100) as broker:
        figures: dict[str, Any] = anyio.run(
            paired.paired, broker.addr, 2, 0.2, 0.1, 4, "peer_topic", ("sync", "pipelined"),
            _fake_side(tmp_path), "fake",
        )  # fmt: skip
    assert set(figures) == {"sync_one_in_flight", "pipelined_1k"}
    for path in figures.values():
        # two windows each: the peer's figures pooled (its warm-up's failures left out)
        assert path["fake"]["messages"] == 20
        assert path["fake"]["failed"] == 2
        assert path["fake"]["errors"] == {"TimeoutError": 2}
        assert path["fake"]["p50_ms"] == 0.3
        assert path["ours"]["messages"] > 0
        assert [w["side"] for w in path["windows"]] == ["ours", "fake", "fake", "ours"]
    assert not (tmp_path / "scratch").exists()  # removed at close


def test_a_peer_that_dies_says_why(tmp_path: Path) -> None:
    side = _fake_side(tmp_path)("-", "-", 0, 1)
    try:
        side.ready()
        with pytest.raises(RuntimeError, match=r"(?s)exited 3.*the peer's last words"):
            side.window("crash", 1)
    finally:
        side.close()


def test_deferred_annotations_let_a_314_module_import_on_older_pythons(tmp_path: Path) -> None:
    package = tmp_path / "peerpkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "locks.py").write_text(
        textwrap.dedent('''\
            """A module written for Python 3.14."""
            import threading

            def lock() -> threading.RLock | None:
                return None
        ''')
    )
    (package / "done.py").write_text("from __future__ import annotations\nX = 1\n")

    def imports() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", "import peerpkg.locks, peerpkg.done"],
            cwd=tmp_path, capture_output=True, text=True, check=False,
        )  # fmt: skip

    if sys.version_info < (3, 14):
        assert "unsupported operand" in imports().stderr
    assert peers.defer_annotations(package) == 2  # __init__ and locks, not done
    assert imports().returncode == 0
    assert (package / "done.py").read_text() == "from __future__ import annotations\nX = 1\n"


def test_peers_not_given_are_recorded_as_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("PYROCKETMQ_SOURCE", raising=False)
    out = tmp_path / "peers.json"
    assert peers.main(["--out", str(out), "--skip-rocketmq-python-client"]) == 0
    written = json.loads(out.read_text())
    assert "not on PyPI" in written["pyrocketmq"]["skipped"]
    assert written["rocketmq_python_client"] == {"skipped": "--skip-rocketmq-python-client"}
    assert "pyrocketmq skipped" in capsys.readouterr().err


def test_a_peer_pip_cannot_install_is_recorded_as_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("PYROCKETMQ_SOURCE", raising=False)
    out = tmp_path / "peers.json"
    missing = tmp_path / "no-such-client"  # a local path: pip fails without the network
    scratch = Path(tempfile.gettempdir())
    before = set(scratch.glob("rocketmq-actors-peer-*"))
    assert peers.main(["--out", str(out), "--rocketmq-python-client", str(missing)]) == 0
    skipped = json.loads(out.read_text())["rocketmq_python_client"]["skipped"]
    assert skipped.startswith(f"pip could not install {missing}: ")
    assert "rocketmq_python_client skipped: pip could not install" in capsys.readouterr().err
    assert set(scratch.glob("rocketmq-actors-peer-*")) == before  # its virtualenv removed


def _drain(messages: int, seconds: float, first_s: float, cpu_s: float) -> dict[str, Any]:
    return {"messages": messages, "seconds": seconds, "msgs_per_s": round(messages / seconds),
            "first_message_s": first_s, "cpu_s_from_first": cpu_s}  # fmt: skip


def test_drains_take_turns_and_pool_each_sides_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    order: list[str] = []

    async def prefill(namesrv: str, topic: str, count: int) -> float:
        order.append("prefill")
        return 0.0

    async def ours(namesrv: str, topic: str, count: int) -> dict[str, Any]:
        order.append("ours")
        return _drain(count, 2.0, 1.0, 0.5)  # 1 s from the first message

    class FakePeer(peers.Peer):
        def drain(self, topic: str, count: int) -> dict[str, Any]:
            order.append("peer")
            return _drain(count, 5.0, 1.0, 2.0)  # 4 s from the first message

    monkeypatch.setattr(consumer, "prefill", prefill)
    monkeypatch.setattr(consumer, "push_drain", ours)
    pooled = peers.drains(FakePeer("fake", "python", "-"), "ns", 1000, 4)
    assert order == ["prefill", "ours", "peer", "peer", "ours", "ours", "peer", "peer", "ours"]
    assert pooled["ours"]["msgs_per_s_from_first"] == 1000
    assert pooled["fake"]["msgs_per_s_from_first"] == 250
    assert pooled["ours"]["client_cpu_us_per_msg"] == 500.0
    assert pooled["fake"]["client_cpu_us_per_msg"] == 2000.0


def _measured(**extra: Any) -> dict[str, Any]:
    def side(rate: int, cpu: float, seconds: float, failed: int = 0) -> dict[str, Any]:
        return {"msgs_per_s": rate, "client_cpu_us_per_msg": cpu, "seconds": seconds,
                "p50_ms": 0.2, "p99_ms": 0.9, "failed": failed}  # fmt: skip

    drain = {"msgs_per_s_from_first": 100, "client_cpu_us_per_msg": 9.0, "first_message_s": [1]}
    return {
        "client": "a/peer", "revision": "abc", "broker": "4.9.7", "limits": "one connection",
        "taken_at": "2026-11-26T09:00:00Z", "windows": 4, "window_seconds": 3.0,
        "produce": {
            "sync_one_in_flight": {"ours": side(400, 80.0, 12.0),
                                   "peer": {**side(200, 300.0, 12.0, 3), "errors": {"E": 3}}},
            "pipelined_1k": {"ours": side(5000, 16.0, 12.0), "peer": side(50, 340.0, 50.0)},
        },
        "consume": {"ours": drain, "peer": {**drain, "msgs_per_s_from_first": 10}},
        **extra,
    }  # fmt: skip


def test_a_run_that_cannot_measure_a_peer_keeps_its_last_figures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PYROCKETMQ_SOURCE", raising=False)
    out = tmp_path / "peers.json"
    out.write_text(json.dumps({"pyrocketmq": _measured()}))
    assert peers.main(["--out", str(out), "--skip-rocketmq-python-client"]) == 0
    kept = json.loads(out.read_text())["pyrocketmq"]
    assert kept["produce"] == _measured()["produce"]
    assert kept["taken_at"] == "2026-11-26T09:00:00Z"
    assert "not on PyPI" in kept["not_remeasured"]


def test_a_peer_program_answers_a_wrong_command_with_an_error_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    calls: list[tuple[object, ...]] = []
    assert peer_protocol.run(["windows", "a", "t", "1.5", "8"], lambda *a: calls.append(a),
                             lambda *a: calls.append(a)) == 0  # fmt: skip
    assert calls == [("a", "t", 1.5, 8)]
    assert peer_protocol.run(["drian", "a", "t", "g", "5"], print, print) == 2
    assert json.loads(capsys.readouterr().out)["error"].startswith("usage: windows|drain")
    assert not logging.root.manager.disable  # the harness's own logging left as it was
