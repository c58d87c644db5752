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
    match = re.search(r'"faststream>=([0-9.]+),<([0-9.]+)"', PYPROJECT.read_text())
    assert match is not None
    floor, ceiling = Version(match.group(1)), Version(match.group(2))
    expected = os.environ.get("ROCKETMQ_ACTORS_EXPECT_FASTSTREAM")
    if expected is not None:
        assert installed == Version(expected) == floor
    else:
        assert floor <= installed < ceiling
