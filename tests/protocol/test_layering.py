"""protocol/ is sans-IO: it must not import an event loop, sockets or logging."""

from __future__ import annotations

import ast
from pathlib import Path

import rocketmq_actors.protocol

FORBIDDEN = {"anyio", "asyncio", "socket", "ssl", "structlog", "logging", "trio", "selectors"}
PROTOCOL_DIR = Path(rocketmq_actors.protocol.__file__).parent


def _imports(path: Path) -> set[str]:
    """The absolute names of the modules ``path`` imports (relative imports resolved)."""
    package = ["rocketmq_actors", *path.relative_to(PROTOCOL_DIR.parent).parent.parts]
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            names.add(".".join([*base, *([node.module] if node.module else [])]))
    return names


def _top(names: set[str]) -> set[str]:
    return {name.split(".")[0] for name in names}


def test_protocol_imports_no_io() -> None:
    files = sorted(PROTOCOL_DIR.rglob("*.py"))
    assert len(files) >= 8  # the check really looked at the package
    offenders = {p.name: _top(_imports(p)) & FORBIDDEN for p in files}
    assert {name: found for name, found in offenders.items() if found} == {}


def test_protocol_imports_nothing_from_upper_layers() -> None:
    offenders = {
        (p.name, name)
        for p in PROTOCOL_DIR.rglob("*.py")
        for name in _imports(p)
        if name.split(".")[0] == "rocketmq_actors" and name.split(".")[1:2] != ["protocol"]
    }
    assert offenders == set()  # protocol/ stands alone, relative imports included


def test_relative_imports_are_resolved() -> None:
    names = _imports(PROTOCOL_DIR / "framing.py")
    assert "rocketmq_actors.protocol.command" in names  # (from .command import ...)
