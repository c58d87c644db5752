"""Without FastStream installed, importing the integration names the extra to install; the
FastStream the tests run on is the one the run expects."""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import re
import sys
from pathlib import Path

import pytest
from packaging.version import Version

from rocketmq_actors.errors import RocketMQError
from rocketmq_actors.extras import MissingExtra

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def test_missing_faststream_raises_missing_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(sys.modules):
        if name == "faststream" or name.startswith(("faststream.", "rocketmq_actors.faststream")):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "faststream", None)  # as if not installed
    with pytest.raises(MissingExtra) as caught:
        importlib.import_module("rocketmq_actors.faststream")
    assert isinstance(caught.value, RocketMQError) and caught.value.extra == "faststream"
    assert "pip install 'rocketmq-actors[faststream]'" in str(caught.value)


def test_the_faststream_these_tests_run_on() -> None:
    """The extra's range is tested at both ends: a run at the oldest FastStream it allows
    (``make oldest-faststream``, ROCKETMQ_ACTORS_EXPECT_FASTSTREAM set) must
    really use it, and a normal run one inside the range."""
    installed = Version(importlib.metadata.version("faststream"))
    match = re.search(r'"faststream(?:\[cli\])?>=([0-9.]+),<([0-9.]+)"', PYPROJECT.read_text())
    assert match is not None
    floor, ceiling = Version(match.group(1)), Version(match.group(2))
    expected = os.environ.get("ROCKETMQ_ACTORS_EXPECT_FASTSTREAM")
    if expected is not None:
        assert installed == Version(expected) == floor
    else:
        assert floor <= installed < ceiling


APP = """\
from faststream import FastStream

from rocketmq_actors.faststream import RocketMQBroker

broker = RocketMQBroker("127.0.0.1:9876")


@broker.subscriber("orders", group="billing")
async def handle(body: str) -> None:
    pass


app = FastStream(broker)
"""


def test_the_extra_brings_faststreams_command_line(tmp_path: Path) -> None:
    """docs/faststream.md tells users to run ``faststream run`` and ``faststream docs gen``:
    FastStream's command line needs its ``cli`` extra, which ours pulls in (before, both
    commands failed with FastStream's ImportError). Generating the AsyncAPI document imports
    the app and connects to nothing."""
    import subprocess

    (tmp_path / "service.py").write_text(APP)
    out = tmp_path / "asyncapi.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(tmp_path), os.environ.get("PYTHONPATH", "")) if p)}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "faststream", "docs", "gen", "service:app", "--out", str(out)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert '"orders' in out.read_text()
