"""The wheel's build hook (hatch_build.py): pure by default, the send path compiled on request."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path
from typing import Any

import pytest
from hatchling.metadata.core import ProjectMetadata
from hatchling.plugin.manager import PluginManager

import hatch_build
from benchmarks.compiled import _derived
from rocketmq_actors._compiled import is_compiled

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
HOOK: dict[str, Any] = PYPROJECT["tool"]["hatch"]["build"]["targets"]["wheel"]["hooks"]["custom"]
MODULES: list[str] = HOOK["mypyc-modules"]


def _hook(config: dict[str, Any]) -> hatch_build.MypycBuildHook:
    metadata = ProjectMetadata(str(ROOT), PluginManager())
    return hatch_build.MypycBuildHook(str(ROOT), config, None, metadata, str(ROOT), "wheel")


def test_the_wheel_compiles_the_measured_send_path() -> None:
    """The hook's modules are the ``send_path`` scope that ``benchmarks.compiled`` measured
    and ran the unit tests against, and none has a class that the package derives from
    outside the build (a compiled class cannot be subclassed)."""
    measured = json.loads((ROOT / "benchmarks" / "results" / "compiled.json").read_text())
    assert sorted(MODULES) == sorted(measured["scopes"]["send_path"]["modules"])
    assert measured["scopes"]["send_path"]["tests"]["failed"] == 0
    assert _derived(list(MODULES)) == {}
    assert all((ROOT / "rocketmq_actors" / f"{m}.py").is_file() for m in MODULES)


@pytest.mark.parametrize(
    ("module_file", "compiled"),
    [
        ("/x/rocketmq_actors/protocol/framing.cpython-311-x86_64-linux-gnu.so", True),
        ("C:/x/rocketmq_actors/protocol/framing.cp311-win_amd64.pyd", True),
        ("/x/rocketmq_actors/protocol/framing.py", False),
        ("/x/rocketmq_actors/protocol/framing.pyc", False),  # (a .pyc-only install)
        (None, False),
    ],
)
def test_a_module_is_compiled_when_it_is_an_extension(
    module_file: str | None, compiled: bool
) -> None:
    assert is_compiled(module_file) is compiled


def test_the_hook_builds_only_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    hook = _hook(HOOK)
    monkeypatch.delenv(hatch_build.ENABLE, raising=False)
    assert hook.dependencies() == []
    build_data: dict[str, Any] = {"force_include": {}}
    hook.initialize("standard", build_data)
    assert build_data == {"force_include": {}}
    monkeypatch.setenv(hatch_build.ENABLE, "1")
    # an isolated build installs these only: mypyc type-checks the package with its imports
    wanted = [*hatch_build.REQUIRES, *PYPROJECT["project"]["dependencies"],
              *PYPROJECT["project"]["optional-dependencies"]["orjson"]]  # fmt: skip
    assert sorted(hook.dependencies()) == sorted(wanted)
    assert any(d.startswith("attrs") for d in hook.dependencies())
    hook.initialize("editable", build_data)  # (an editable install imports the sources)
    assert build_data == {"force_include": {}}


def _imports(module: str) -> set[str]:
    """Every module that ``rocketmq_actors.<module>`` (dotted, no prefix) imports, anywhere in
    it (mypy follows imports inside functions too), as absolute names."""
    source = ROOT / "rocketmq_actors" / Path(*module.split("."))
    path = source / "__init__.py" if source.is_dir() else source.with_suffix(".py")
    package = module if source.is_dir() else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = ["rocketmq_actors", *package.split(".")] if package else ["rocketmq_actors"]
                base = ".".join([*parts[: len(parts) - node.level + 1], *filter(None, [base])])
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def _reached() -> tuple[set[str], set[str]]:
    """The package's modules that mypyc's type check of the hook's modules reaches, and the
    top-level names of the other imports they make (not the standard library's)."""
    todo = [m.replace("/", ".") for m in MODULES]
    reached: set[str] = set()
    others: set[str] = set()
    while todo:
        module = todo.pop()
        parts = module.split(".")
        for name in [".".join(parts[:i]) for i in range(1, len(parts) + 1)]:
            source = ROOT / "rocketmq_actors" / Path(*name.split("."))
            if name in reached or not (source.is_dir() or source.with_suffix(".py").is_file()):
                continue
            reached.add(name)
            for imported in _imports(name):
                if imported.startswith("rocketmq_actors."):
                    todo.append(imported.removeprefix("rocketmq_actors."))
                elif imported.split(".")[0] not in sys.stdlib_module_names:
                    others.add(imported.split(".")[0])
    return reached, others


def test_an_isolated_build_has_every_import_the_type_check_reaches(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An isolated build (``pip install``) has only what the hook asks for: mypyc's type check
    fails on an import it reaches that is neither installed there nor ignored (an isolated
    build once lacked attrs, anyio and orjson; ``make compiled`` builds in the venv)."""
    reached, others = _reached()
    assert {"producer.sendloop", "protocol.command", "producer"} <= reached  # (the walk works)
    monkeypatch.setenv(hatch_build.ENABLE, "1")
    hook = _hook(HOOK)
    installed = {re.split(r"[<>=~!; \[]", d, maxsplit=1)[0] for d in hook.dependencies()}
    ignored = set(re.findall(r"([a-z_0-9]+)\.\*", hatch_build.MYPY_INI))
    aliases = {"attr": "attrs"}  # (an import name that is not its distribution's)
    missing = {name for name in others if aliases.get(name, name) not in installed | ignored}
    assert "anyio" in others and missing == set()


def test_the_wheel_is_built_with_the_mypy_the_tests_use() -> None:
    """The mypy that compiles an isolated build is the one the dev extra installs, which
    ``make compiled`` builds and tests with (mypyc's output changes between releases)."""
    (mypy,) = [r for r in hatch_build.REQUIRES if r.startswith("mypy")]
    assert mypy in PYPROJECT["project"]["optional-dependencies"]["dev"]


@pytest.mark.parametrize(
    "config",
    [{}, {"mypyc-modules": []}, {"mypyc-modules": [1]}, {"mypyc-modules": "protocol/framing"}],
)
def test_the_hook_refuses_a_missing_module_list(
    config: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(hatch_build.ENABLE, "1")
    with pytest.raises(ValueError, match="mypyc-modules"):
        _hook(config).initialize("standard", {"force_include": {}})


def test_the_files_a_build_puts_into_the_wheel(tmp_path: Path) -> None:
    (tmp_path / "rocketmq_actors" / "protocol").mkdir(parents=True)
    for name in ("rocketmq_actors/protocol/framing.cpython-311-x86_64-linux-gnu.so",
                 "rocketmq_actors/protocol/framing.py", "abc123__mypyc.cpython-311-x86_64-linux"
                 "-gnu.so", "build/temp.o", "mypy.ini"):  # fmt: skip
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    assert hatch_build.extensions(tmp_path) == {
        str(tmp_path / "rocketmq_actors/protocol/framing.cpython-311-x86_64-linux-gnu.so"):
            "rocketmq_actors/protocol/framing.cpython-311-x86_64-linux-gnu.so",
        str(tmp_path / "abc123__mypyc.cpython-311-x86_64-linux-gnu.so"):
            "abc123__mypyc.cpython-311-x86_64-linux-gnu.so",
    }  # fmt: skip


def _build(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != hatch_build.ENABLE}
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, check=True, timeout=300)  # fmt: skip


def test_the_default_wheel_is_pure_and_the_sdist_carries_the_hook(tmp_path: Path) -> None:
    """Without ``ROCKETMQ_ACTORS_MYPYC`` the wheel is pure Python, for every platform; the
    sdist carries the hook, so a wheel builds from it (``make compiled`` builds the compiled
    one, from the checkout)."""
    _build("hatchling", "build", "--target", "sdist", "--directory", str(tmp_path))
    (sdist,) = tmp_path.glob("rocketmq_actors-*.tar.gz")
    top = sdist.name.removesuffix(".tar.gz")
    with tarfile.open(sdist) as archive:
        names = set(archive.getnames())
    assert {f"{top}/hatch_build.py", f"{top}/pyproject.toml"} <= names
    _build("pip", "wheel", "--quiet", "--no-build-isolation", "--no-deps",
           "--wheel-dir", str(tmp_path / "dist"), str(sdist))  # fmt: skip
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    assert wheel.name.endswith("-py3-none-any.whl")
    with zipfile.ZipFile(wheel) as archive:
        files = archive.namelist()
    assert "rocketmq_actors/protocol/framing.py" in files
    assert not [f for f in files if f.endswith((".so", ".pyd"))]
