"""The layer order of docs/architecture.md is an import-linter contract (pyproject.toml), which
`make lint` checks: it holds on the package, and an upward import breaks it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def _lint(tree: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--config", str(tree / "pyproject.toml")],
        cwd=tree, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


@pytest.fixture
def copy_of_the_package(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "rocketmq_actors", tmp_path / "rocketmq_actors",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def test_the_package_keeps_the_contracts(copy_of_the_package: Path) -> None:
    kept = _lint(copy_of_the_package)
    assert kept.returncode == 0, kept.stdout[-3000:] + kept.stderr[-2000:]


@pytest.mark.parametrize(
    ("module", "upward"),
    [
        ("protocol/_upward.py", "import rocketmq_actors.runtime.connection"),
        ("runtime/_upward.py", "from rocketmq_actors.cluster import instance"),
        ("producer/_upward.py", "from rocketmq_actors.consumer.push import PushConsumer"),
        ("protocol/_io.py", "import anyio"),
    ],
)
def test_an_upward_import_breaks_them(copy_of_the_package: Path, module: str, upward: str) -> None:
    (copy_of_the_package / "rocketmq_actors" / module).write_text(upward + "\n")
    broken = _lint(copy_of_the_package)
    assert broken.returncode != 0
    assert f"rocketmq_actors.{module[:-3].replace('/', '.')}" in broken.stdout, broken.stdout


def test_the_architecture_document_states_exactly_the_contracts_order() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    (layers,) = [
        c["layers"] for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers"
    ]
    text = (ROOT / "docs" / "architecture.md").read_text()
    block = re.search(r"<!-- layers: [^>]*-->\n```text\n(.*?)```", text, flags=re.S)
    assert block is not None
    assert block.group(1).splitlines() == layers
