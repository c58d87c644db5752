"""Without FastStream installed, importing the integration names the extra to install."""

from __future__ import annotations

import importlib
import sys

import pytest

from rocketmq_actors.errors import RocketMQError
from rocketmq_actors.extras import MissingExtra


def test_missing_faststream_raises_missing_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(sys.modules):
        if name == "faststream" or name.startswith(("faststream.", "rocketmq_actors.faststream")):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "faststream", None)  # as if not installed
    with pytest.raises(MissingExtra) as caught:
        importlib.import_module("rocketmq_actors.faststream")
    assert isinstance(caught.value, RocketMQError) and caught.value.extra == "faststream"
    assert "pip install 'rocketmq-actors[faststream]'" in str(caught.value)
