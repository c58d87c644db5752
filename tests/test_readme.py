"""The README's examples run as written (against the session cluster)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"

pytestmark = pytest.mark.integration


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_every_python_example_compiles() -> None:
    blocks = _python_blocks()
    assert len(blocks) >= 3
    for block in blocks:
        compile(block, "README.md", "exec")


def test_sending_example_runs(rocketmq_namesrv: str, capsys: pytest.CaptureFixture[str]) -> None:
    (block,) = [b for b in _python_blocks() if "async with Producer(" in b]
    code = block.replace("127.0.0.1:9876", rocketmq_namesrv)
    exec(compile(code, "README.md", "exec"), {"__name__": "readme"})
    assert "SendStatus.SEND_OK" in capsys.readouterr().out


def test_blocking_example_runs(rocketmq_namesrv: str) -> None:
    (block,) = [b for b in _python_blocks() if "BlockingProducer(" in b]
    code = block.replace("127.0.0.1:9876", rocketmq_namesrv)
    namespace: dict[str, object] = {"__name__": "readme"}
    exec(compile(code, "README.md", "exec"), namespace)
    assert namespace["producer"].__class__.__name__ == "BlockingProducer"
