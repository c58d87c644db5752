"""The harness of ``benchmarks.peers``: a peer's process takes turns with ours over the stdin
protocol, its failures are kept, a peer that dies says why, and a peer that is not given is
reported as skipped. (The peers themselves are not installed here: ``make bench`` runs them.)"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest

from benchmarks import paired, peers
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
