"""Would compiling the send path with mypyc pay? Measured, before anything is shipped.

    python -m benchmarks.compiled [--rounds 4] [--windows 5] [--seconds 3]

1. The candidates - every module of ``rocketmq_actors/protocol`` and the modules beyond it on
   the send path's profile (``SEND_PATH``) - are compiled in one build in a scratch copy of the
   package; a module mypyc refuses, that then fails to import, or with a class that a class of
   the package outside the build derives from (a compiled class cannot be subclassed), is left
   out with the reason, and the rest are built again, until every module left imports
   compiled. A module mypyc refused is then tried again alone with the build (its error may
   have come from a module left out since).
2. The codec (``benchmarks/codec.py``) with that build against the pure-Python package, in
   alternating fresh processes (``--rounds`` each).
3. Our pipelined paths against the null broker - (b) ``await send`` and ``send_nowait`` - with
   three scopes of compiled modules (``SCOPES``): ``protocol/`` alone, the modules of the build
   that define no coroutine, and the whole build, against the pure package, in alternating
   fresh windows (``benchmarks/abtest.py``'s worker; the null broker on a core of its own where
   there are two, as ``benchmarks.nullbroker --pin``).
4. Each scope's parity: the unit tests of the packages the build compiles (``PARITY_TESTS``,
   no broker, not those marked ``interpreted``: they replace or inspect what mypyc compiles)
   run against it; a build worth shipping must pass what the pure package passes.

The scratch copies are removed at exit; results go to ``benchmarks/results/compiled.json`` and
docs/performance.md.
"""

from __future__ import annotations

import argparse
import ast
import collections
import functools
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from hatch_build import copy_package, run_mypyc
from rocketmq_actors._compiled import is_compiled

from .abtest import pooled, warm_up, window
from .common import RESULTS, TREE, alternating, last_json, write_results
from .nullbroker import null_broker, pin_layout

PACKAGE = TREE / "rocketmq_actors"
CODEC_FIGURES = ("encode_send_v2_us", "decode_response_frame_us", "decode_128b_msgs_per_s")
#: beyond protocol/: the modules a send and its answer go through (benchmarks.sendprofile);
#: not producer/prepare, which validates the user's Message: compiled, reading a field of the
#: wrong type raises TypeError before its check can say what is wrong (InvalidMessage)
SEND_PATH = (
    "runtime/connection", "runtime/wire", "runtime/soon", "runtime/signal", "runtime/waiters",
    "runtime/lifecycle", "producer/attempt", "producer/result", "producer/senders",
    "producer/sendloop", "producer/selector", "cluster/routes", "metrics",
)  # fmt: skip
PATHS = {"b_pipelined_1k": False, "b_pipelined_nowait_1k": True}  # (the path: send_nowait?)
#: the scopes measured: which modules of the build each keeps compiled
SCOPES = ("protocol", "sync", "send_path")
#: the unit tests of the packages the build compiles (no broker), run against each scope
PARITY_TESTS = ("tests/protocol", "tests/producer", "tests/runtime", "tests/cluster")
_OUTCOME = re.compile(r"^(?:FAILED|ERROR) (tests/[^:\s]+)", flags=re.M)
_COUNT = re.compile(r"(\d+) (passed|failed|errors?|deselected)\b")
_ERROR = re.compile(r"^rocketmq_actors/(\S+)\.py:\d+: error: (.*)$", flags=re.M)


def candidates() -> list[str]:
    protocol = sorted(
        f"protocol/{p.stem}" for p in (PACKAGE / "protocol").glob("*.py") if p.stem != "__init__"
    )
    return [*protocol, *SEND_PATH]


_FRAME = re.compile(r'File "(?:[^"]*/)?rocketmq_actors/(\S+)\.py", line')


def _import_errors(tree: Path, modules: list[str]) -> dict[str, str]:
    """The modules of the build in ``tree`` that fail to import compiled, each with why: the
    module where the import failed (its frame the last of the package's in the traceback), not
    each module that imports it (empty if all import)."""
    failed: dict[str, str] = {}
    for module in modules:
        name = "rocketmq_actors." + module.replace("/", ".")
        code = (f"import {name} as m; from rocketmq_actors._compiled import is_compiled; "
                f"assert is_compiled(m.__file__), m.__file__")  # fmt: skip
        done = subprocess.run([sys.executable, "-c", code], cwd=tree, capture_output=True,
                              text=True, check=False, timeout=120)  # fmt: skip
        if done.returncode != 0:
            frames = _FRAME.findall(done.stderr)
            culprit = frames[-1] if frames else module
            if culprit not in modules:  # (it failed in interpreted code: no guess)
                raise SystemExit(f"importing {name} failed outside the build:\n{done.stderr}")
            last = (done.stderr.strip().splitlines() or ["?"])[-1]
            failed.setdefault(culprit, f"import fails: {last}")
    return failed


@functools.cache  # (every round of a build asks again, of every module of the package)
def _parsed(module: str) -> ast.Module:
    return ast.parse((PACKAGE / f"{module}.py").read_text())


def _classes(module: str) -> tuple[ast.ClassDef, ...]:
    return tuple(node for node in ast.walk(_parsed(module)) if isinstance(node, ast.ClassDef))


def has_coroutine(module: str) -> bool:
    """Does ``module`` define a coroutine function? (The ``sync`` scope: what compiling the
    codec and the other plain functions alone saves.)"""
    return any(isinstance(node, ast.AsyncFunctionDef) for node in ast.walk(_parsed(module)))


def scopes_of(built: list[str]) -> dict[str, list[str]]:
    """The modules each scope of ``SCOPES`` keeps compiled, of the ``built`` ones: less each
    module with a class that a class the scope leaves interpreted derives from."""
    scopes = {
        "protocol": [m for m in built if m.startswith("protocol/")],
        "sync": [m for m in built if not has_coroutine(m)],
        "send_path": list(built),
    }
    for modules in scopes.values():
        while refused := _derived(modules):
            modules[:] = [m for m in modules if m not in refused]
    return scopes


def _base_name(base: ast.expr) -> str | None:
    if isinstance(base, ast.Subscript):  # Generic[T], Base[T]
        base = base.value
    if isinstance(base, ast.Attribute):
        return base.attr
    return base.id if isinstance(base, ast.Name) else None


def _derived(modules: list[str]) -> dict[str, str]:
    """The modules of the build with a class that a class of the package outside the build
    derives from, each with why: a compiled class cannot be subclassed by an interpreted one
    (mypyc raises that when an instance is made, so no import shows it)."""
    defined = {node.name: module for module in modules for node in _classes(module)}
    found: dict[str, str] = {}
    for source in sorted(PACKAGE.rglob("*.py")):
        outside = source.relative_to(PACKAGE).with_suffix("").as_posix()
        if outside in modules:
            continue
        for node in _classes(outside):
            for base in filter(None, map(_base_name, node.bases)):
                if base in defined:
                    found.setdefault(defined[base], f"{outside}.{node.name} derives from its "
                                     f"{base} (a compiled class cannot be subclassed)")  # fmt: skip
    return found


def _converge(scratch: Path, modules: list[str], verdicts: dict[str, str]) -> Path | None:
    """Build ``modules`` (in place: the ones left out are removed, with their verdicts), until
    the build compiles and every module of it imports; the build, or None if none is left."""
    for _ in range(len(modules)):
        if refused := _derived(modules):
            verdicts.update(refused)
            modules[:] = [m for m in modules if m not in refused]
            continue
        tree = copy_package(TREE, Path(tempfile.mkdtemp(prefix="build-", dir=scratch)))
        done = run_mypyc(tree, modules)
        if done.returncode != 0:
            refused = {m: f"mypyc refuses it: {e}" for m, e in reversed(_ERROR.findall(
                done.stdout + done.stderr)) if m in modules}  # fmt: skip
            if not refused:
                raise SystemExit(f"mypyc failed: {(done.stdout + done.stderr)[-600:]}")
        elif not (refused := _import_errors(tree, modules)):
            return tree
        verdicts.update(refused)
        modules[:] = [m for m in modules if m not in refused]
        shutil.rmtree(tree, ignore_errors=True)
        if not modules:
            break
    return None


def build(scratch: Path, modules: list[str]) -> tuple[Path, dict[str, str]]:
    """The build of every module of ``modules`` that compiles and imports in one build, and
    each module's verdict: "ok", or why it was left out. A module mypyc refused is tried again,
    alone with the build, once the build holds: its error may have come from another module
    then left out (a class of ``messages`` read through the class, a base class in
    ``headers``)."""
    verdicts: dict[str, str] = {}
    kept = list(modules)
    tree = _converge(scratch, kept, verdicts)
    retried: set[str] = set()
    while tree is not None:
        back = []
        for module in [m for m, v in verdicts.items() if v.startswith("mypyc refuses")]:
            if module in retried:
                continue
            retried.add(module)
            trial = copy_package(TREE, scratch / f"retry-{module.replace('/', '-')}")
            with_it = [*kept, module]
            if (run_mypyc(trial, with_it).returncode == 0 and not _derived(with_it)
                    and not _import_errors(trial, [module])):  # fmt: skip
                back.append(module)
            shutil.rmtree(trial, ignore_errors=True)
        if not back:
            return tree, {**verdicts, **dict.fromkeys(kept, "ok")}
        for module in back:
            del verdicts[module]
        kept += back
        shutil.rmtree(tree, ignore_errors=True)
        tree = _converge(scratch, kept, verdicts)
    raise SystemExit(f"no module of {modules} builds: {verdicts}")


def scoped(tree: Path, keep: list[str], target: Path) -> Path:
    """A copy of ``tree`` with only the compiled modules of ``keep``."""
    shutil.copytree(tree / "rocketmq_actors", target / "rocketmq_actors",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    for built in (target / "rocketmq_actors").rglob("*.so"):
        module = built.relative_to(target / "rocketmq_actors").parent / built.name.split(".")[0]
        if module.as_posix() not in keep:
            built.unlink()
    for shared in tree.glob("*.so"):  # (mypyc's shared library of the build)
        shutil.copy2(shared, target)
    return target


def _codec(tree: Path) -> dict[str, Any]:
    out = tree.parent / "codec.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), str(TREE)])}
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.codec", "--out", str(out)],
        cwd=tree, env=env, capture_output=True, text=True, check=True, timeout=600,
    )  # fmt: skip
    figures = last_json(done.stdout, "benchmarks.codec")
    return {key: figures[key] for key in CODEC_FIGURES}


def codec_pairs(pure: Path, compiled: Path, rounds: int) -> dict[str, list[dict[str, Any]]]:
    runs: dict[str, list[dict[str, Any]]] = {"pure": [], "compiled": []}
    for side in alternating(rounds, "pure", "compiled"):
        runs[side].append(_codec(pure if side == "pure" else compiled))
    return runs


def _not_run(why: str) -> dict[str, Any]:
    return {"passed": 0, "failed": 0, "failed_by_file": {}, "deselected": 0, "error": why}


def tally(stdout: str) -> dict[str, Any]:
    """What a ``pytest -q -rfE`` run's output says: how many tests passed, failed (errors
    included) and were deselected, and the failures per test file; ``error`` if it gave no
    count (a collection error, a crash)."""
    summary = (stdout.strip().splitlines() or [""])[-1]
    counts = {kind.rstrip("s"): int(n) for n, kind in _COUNT.findall(summary)}
    if "passed" not in counts and "failed" not in counts:
        return _not_run(stdout[-600:])
    failing = collections.Counter(_OUTCOME.findall(stdout))
    return {
        "passed": counts.get("passed", 0),
        "failed": counts.get("failed", 0) + counts.get("error", 0),
        "failed_by_file": dict(sorted(failing.items())),
        "deselected": counts.get("deselected", 0),  # (integration and interpreted tests)
    }


def parity(compiled: Path, modules: list[str]) -> dict[str, Any]:
    """The unit tests of ``PARITY_TESTS`` run against the build in ``compiled`` (its package
    first on the path, this tree's tests), as :func:`tally` counts them."""
    env = {**os.environ, "PYTHONPATH": str(compiled)}
    name = "rocketmq_actors." + modules[0].replace("/", ".")
    code = f"import {name} as m; print(m.__file__)"
    probe = subprocess.run([sys.executable, "-P", "-c", code], cwd=TREE, env=env,
                           capture_output=True, text=True, check=True)  # fmt: skip
    if not is_compiled(probe.stdout.strip()):  # (the tests would run the pure package)
        raise SystemExit(f"{name} is not compiled on the parity run's path: {probe.stdout}")
    pytest = Path(sys.executable).with_name("pytest")
    try:
        done = subprocess.run(
            [str(pytest), "-q", "-rfE", "-p", "no:cacheprovider", "--import-mode=append",
             "-m", "not integration and not interpreted", *PARITY_TESTS],
            cwd=TREE, env=env, capture_output=True, text=True, check=False, timeout=1800,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return _not_run("timed out (30 min)")
    return tally(done.stdout + (f"\n{done.stderr}" if "passed" not in done.stdout else ""))


def pipelined_pairs(
    addr: str, compiled: Path, windows: int, seconds: float, nowait: bool
) -> dict[str, Any]:
    sides: dict[str, list[dict[str, Any]]] = {"pure": [], "compiled": []}
    for side in alternating(windows, "pure", "compiled"):
        got = window(compiled if side == "compiled" else None, addr, seconds, 256, nowait=nowait)
        if got.pop("framing_compiled") != (side == "compiled"):  # (PYTHONPATH shadowing)
            raise SystemExit(f"the {side} window ran the package of {got.pop('package')}")
        got.pop("package")
        sides[side].append(got)
    return {side: pooled(each, seconds) for side, each in sides.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=4, help="codec runs per side")
    parser.add_argument("--windows", type=int, default=5, help="pipelined windows per side")
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--out", type=Path, default=RESULTS / "compiled.json")
    args = parser.parse_args(argv)
    began = time.monotonic()
    layout = pin_layout(required=False)
    scratch = Path(tempfile.mkdtemp(prefix="rocketmq-actors-mypyc-"))
    try:
        tree, verdicts = build(scratch, candidates())
        built = [m for m, v in verdicts.items() if v == "ok"]
        scopes = {scope: modules for scope, modules in scopes_of(built).items() if modules}
        trees = {scope: scoped(tree, modules, scratch / f"scope-{scope}")
                 for scope, modules in scopes.items()}  # fmt: skip
        # (before the windows, which need the cores to themselves: a failure costs no window)
        tests = {scope: parity(trees[scope], modules) for scope, modules in scopes.items()}
        codec = codec_pairs(copy_package(TREE, scratch / "pure"), trees["protocol"], args.rounds)
        measured: dict[str, Any] = {}
        with null_broker(layout) as broker:
            warm_up(broker.addr, args.seconds, 256)
            for scope, modules in scopes.items():
                measured[scope] = {"modules": modules, "tests": tests[scope], **{
                    path: pipelined_pairs(broker.addr, trees[scope], args.windows,
                                          args.seconds, nowait)
                    for path, nowait in PATHS.items()
                }}  # fmt: skip
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    write_results(
        args.out,
        {
            "settings": {"rounds": args.rounds, "windows": args.windows,
                         "window_seconds": args.seconds, "pinned": layout is not None,
                         "took_seconds": round(time.monotonic() - began)},
            "modules": verdicts,
            "codec": codec,
            "scopes": measured,
        },
    )  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
