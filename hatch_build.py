"""The wheel's build hook: the send path compiled with mypyc, when asked (issue 28).

    ROCKETMQ_ACTORS_MYPYC=1 python -m pip wheel --no-deps --wheel-dir dist .

Without ``ROCKETMQ_ACTORS_MYPYC=1``, and always for an editable install, the hook does nothing
and the wheel is pure Python, for every platform. With it, the modules that pyproject.toml lists
under ``[tool.hatch.build.targets.wheel.hooks.custom] mypyc-modules`` are compiled with mypyc
(which needs a C compiler and Python's headers) in a scratch copy of the package, and the wheel
carries each one's extension module beside its source, which Python imports first, and mypyc's
shared library at its root. The wheel is then tagged for this interpreter and platform.

``benchmarks.compiled`` measures what the compiled modules save and runs the unit tests against
them, and ``make compiled`` (part of ``make test``) builds this wheel and runs them against it:
docs/performance.md says why these modules and not the others.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

ENABLE = "ROCKETMQ_ACTORS_MYPYC"
PACKAGE = "rocketmq_actors"
#: what the build needs beyond hatchling (mypyc writes a setuptools script and runs it)
REQUIRES = ("mypy>=1.10", "setuptools>=65")
#: mypyc type-checks what it compiles: the project's allowance for the extras without stubs
MYPY_INI = "[mypy]\n[mypy-lz4.*,pyarrow.*,pyspark.*]\nignore_missing_imports = True\n"


def requested() -> bool:
    return os.environ.get(ENABLE, "").strip().lower() in {"1", "true", "yes"}


def copy_package(source: Path, target: Path) -> Path:
    """A copy of the package in ``source`` (no caches, no compiled modules) under ``target``,
    with the mypy configuration mypyc reads there; ``target``."""
    shutil.copytree(source / PACKAGE, target / PACKAGE,
                    ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyd"))  # fmt: skip
    (target / "mypy.ini").write_text(MYPY_INI)
    return target


def run_mypyc(tree: Path, modules: Sequence[str]) -> subprocess.CompletedProcess[str]:
    """mypyc over ``modules`` (``protocol/framing``: paths in the package, no suffix) of the
    copy in ``tree``: each extension module beside its source, the shared library in ``tree``."""
    return subprocess.run(
        [sys.executable, "-m", "mypyc", *(f"{PACKAGE}/{m}.py" for m in modules)], cwd=tree,
        capture_output=True, text=True, check=False, timeout=1800,
    )  # fmt: skip


def extensions(tree: Path) -> dict[str, str]:
    """The files of a build in ``tree`` that go into the wheel: each path, with where it goes."""
    suffixes = (".so", ".pyd")
    found = {str(p): p.relative_to(tree).as_posix()
             for p in (tree / PACKAGE).rglob("*") if p.suffix in suffixes}  # fmt: skip
    found.update({str(p): p.name for p in tree.glob("*__mypyc*") if p.suffix in suffixes})
    return found


class MypycBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    """hatchling's custom build hook (``hatch_build.py`` is where it looks for one)."""

    PLUGIN_NAME = "custom"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._scratch: Path | None = None

    def modules(self) -> list[str]:
        modules = self.config.get("mypyc-modules")
        if not modules or not all(isinstance(m, str) for m in modules):
            raise ValueError("pyproject.toml: mypyc-modules must list the modules to compile")
        return list(modules)

    def dependencies(self) -> list[str]:
        return list(REQUIRES) if requested() else []

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if version == "editable" or not requested():
            return
        modules = self.modules()
        self._scratch = Path(tempfile.mkdtemp(prefix="rocketmq-actors-wheel-"))
        tree = copy_package(Path(self.root), self._scratch)
        done = run_mypyc(tree, modules)
        built = extensions(tree)
        shared = [name for name in built.values() if "/" not in name]  # (none for one module)
        if done.returncode != 0 or len(built) - len(shared) != len(modules):
            self._clean()
            raise RuntimeError(
                f"mypyc could not build {len(modules)} modules ({ENABLE} is set; it needs a C "
                f"compiler and Python's headers): {(done.stdout + done.stderr)[-2000:]}"
            )
        build_data["force_include"].update(built)
        build_data["pure_python"] = False
        build_data["infer_tag"] = True

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        self._clean()

    def _clean(self) -> None:
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None
