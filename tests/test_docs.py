"""docs/ stays true to the code: every constructor option is in the configuration tables
(with its default). (tests/test_snippets.py runs every snippet against a real cluster.)"""

from __future__ import annotations

import ast
import enum
import inspect
import logging
import re
from pathlib import Path

import attrs
import pytest

from rocketmq_actors.cluster.instance import ClientInstance
from rocketmq_actors.consumer.pop import PopConsumer
from rocketmq_actors.consumer.pull import PullConsumer
from rocketmq_actors.consumer.push import PushConsumer
from rocketmq_actors.producer import Producer

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _table(heading: str) -> dict[str, str]:
    text = (DOCS / "operations.md").read_text()
    section = text.split(f"### `{heading}`", 1)[1].split("\n### ", 1)[0].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(\w+)` \| ([^|]*) \|", section, flags=re.M)
    return {name: default.strip() for name, default in rows}


def _matches(cell: str, default: object) -> bool:
    if default is inspect.Parameter.empty:
        return cell == "required"
    text = cell.strip("`")
    if attrs.has(type(default)):  # an options value: its class's defaults, `Options()`
        return text == f"{type(default).__name__}()" and default == type(default)()
    if isinstance(default, enum.Enum):
        return text == f"{type(default).__name__}.{default.name}"
    return bool(ast.literal_eval(text) == default)


@pytest.mark.parametrize("cls", [ClientInstance, Producer, PushConsumer, PullConsumer, PopConsumer])
def test_configuration_table_lists_every_option_with_its_default(cls: type[object]) -> None:
    params = {
        name: p.default
        for name, p in inspect.signature(cls).parameters.items()
        if p.kind is not p.VAR_KEYWORD
    }
    table = _table(cls.__name__)
    assert set(table) == set(params), "docs/operations.md and the signature differ"
    wrong = {n: (table[n], params[n]) for n in params if not _matches(table[n], params[n])}
    assert not wrong


def test_operations_snippets_run(capsys: pytest.CaptureFixture[str]) -> None:
    """operations.md's snippets need no cluster: they run here as written."""
    blocks = re.findall(r"```python\n(.*?)```", (DOCS / "operations.md").read_text(), flags=re.S)
    assert blocks
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        for block in blocks:
            exec(compile(block, "operations.md", "exec"), {"__name__": "operations_md"})
    finally:  # the snippet configures logging: leave none of it to later tests
        for handler in root.handlers:
            if handler not in handlers:
                root.removeHandler(handler)
        root.setLevel(level)
    # the JSON line the logging snippet promises (configure_logging writes to stderr)
    assert '"event": "example.event"' in capsys.readouterr().err


def architecture_shapes() -> dict[str, str]:
    """The diagrams of docs/architecture.md, by the name in their ``<!-- tree: ... -->``."""
    text = (DOCS / "architecture.md").read_text()
    found = re.findall(r"<!-- tree: ([^>]+?) -->\n```text\n(.*?)```", text, flags=re.S)
    return {name: block.rstrip("\n") for name, block in found}


def test_the_architecture_document_draws_each_clients_tree() -> None:
    assert set(architecture_shapes()) == {
        "producer",
        "push-consumer (orderly)",
        "pull-consumer",
        "pop-consumer",
    }
