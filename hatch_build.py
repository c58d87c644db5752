"""The wheel's build hook: the send path compiled with mypyc, when asked (issue 28).

    ROCKETMQ_ACTORS_MYPYC=1 python -m pip wheel --no-deps --wheel-dir dist .

Without ``ROCKETMQ_ACTORS_MYPYC=1``, and always for an editable install, the hook does nothing
and the wheel is pure Python, for every platform. With it, the modules that pyproject.toml lists
under ``[tool.hatch.build.targets.wheel.hooks.custom] mypyc-modules`` are compiled with mypyc
(which needs a C compiler and Python's headers) in a scratch copy of the package, and the wheel
carries each one's extension module beside its source, which Python imports first, and mypyc's
shared library at its root. The wheel is then tagged for this interpreter and platform.

    python hatch_build.py DIR   # that wheel, built from this checkout, installed into DIR/site

``benchmarks.compiled`` measures what the compiled modules save and runs the unit tests against
them; ``make compiled`` (part of ``make test``) builds and installs this wheel as above and runs
the unit and integration tests of the packages it compiles against it, and ``benchmarks.
nullbroker --compiled`` measures it against Java: docs/performance.md says why these modules
and not the others.
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
#: what the build needs beyond hatchling and the package's own dependencies (mypyc type-checks
#: the package, and attrs's classes take their compiled shape from mypy's attrs plugin): the
#: mypy that ``make compiled`` tests with (the dev extra pins the same), and setuptools, which
#: runs the script mypyc writes
REQUIRES = ("mypy>=2.4,<2.5", "setuptools>=65")
#: the extras an isolated build installs too: ``protocol/command`` type-checks only with orjson
#: there (its optional import redefines two names)
EXTRAS = ("orjson",)
#: the imports mypyc's type check may not find in an isolated build: the other extras (the
#: project's allowance for those without stubs, and those a build environment does not install)
MYPY_INI = (
    "[mypy]\n[mypy-lz4.*,pyarrow.*,pyspark.*,prometheus_client.*,opentelemetry.*]\n"
    "ignore_missing_imports = True\n"
)


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


def install_compiled(scratch: Path) -> Path:
    """The compiled wheel, built from this checkout (in its environment: no isolation) into
    ``scratch``/dist and installed into ``scratch``/site; that directory."""
    env = {**os.environ, ENABLE: "1"}
    pip = [sys.executable, "-m", "pip", "--quiet"]
    checkout, dist, site = Path(__file__).resolve().parent, scratch / "dist", scratch / "site"
    subprocess.run([*pip, "wheel", "--no-build-isolation", "--no-deps", "--wheel-dir", str(dist),
                    str(checkout)], env=env, check=True, timeout=1800)  # fmt: skip
    (wheel,) = dist.glob("*.whl")
    subprocess.run([*pip, "install", "--no-deps", "--target", str(site), str(wheel)],
                   check=True, timeout=600)  # fmt: skip
    return site


class MypycBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    """hatchling's custom build hook (``hatch_build.py`` is where it looks for one)."""

    PLUGIN_NAME = "custom"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # (a TemporaryDirectory: removed at exit too when hatchling never calls finalize)
        self._scratch: tempfile.TemporaryDirectory[str] | None = None

    def modules(self) -> list[str]:
        modules = self.config.get("mypyc-modules")
        if (
            not isinstance(modules, list)
            or not modules
            or not all(isinstance(m, str) for m in modules)
        ):
            raise ValueError("pyproject.toml: mypyc-modules must list the modules to compile")
        return modules

    def dependencies(self) -> list[str]:
        if not requested():
            return []
        extras = self.metadata.core.optional_dependencies
        return [
            *REQUIRES,
            *self.metadata.core.dependencies,
            *(d for e in EXTRAS for d in extras[e]),
        ]

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if version == "editable" or not requested():
            return
        if sys.implementation.name != "cpython":
            raise RuntimeError(f"{ENABLE} is set: mypyc builds for CPython only")
        modules = self.modules()
        self._scratch = tempfile.TemporaryDirectory(prefix="rocketmq-actors-wheel-")
        try:
            tree = copy_package(Path(self.root), Path(self._scratch.name))
            done = run_mypyc(tree, modules)
            built = extensions(tree)
        except BaseException:
            self._clean()
            raise
        names = {n.split(".")[0] for n in built.values() if "/" in n}
        if done.returncode != 0 or names != {f"{PACKAGE}/{m}" for m in modules}:
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
            self._scratch.cleanup()
            self._scratch = None


if __name__ == "__main__":
    install_compiled(Path(sys.argv[1]))
