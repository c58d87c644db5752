"""protocol/ is sans-IO: it must not import an event loop, sockets or logging."""

from __future__ import annotations

import ast
from pathlib import Path

import rocketmq_actors.protocol

FORBIDDEN = {"anyio", "asyncio", "socket", "ssl", "structlog", "logging", "trio", "selectors"}
PROTOCOL_DIR = Path(rocketmq_actors.protocol.__file__).parent


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_protocol_imports_no_io() -> None:
    files = sorted(PROTOCOL_DIR.glob("*.py"))
    assert len(files) >= 8  # the check really looked at the package
    offenders = {p.name: _imports(p) & FORBIDDEN for p in files if _imports(p) & FORBIDDEN}
    assert offenders == {}


def test_protocol_imports_nothing_from_upper_layers() -> None:
    upper = {"rocketmq_actors"}
    offenders = {p.name for p in PROTOCOL_DIR.glob("*.py") if _imports(p) & upper}
    assert offenders == set()  # relative imports only: protocol/ stands alone
