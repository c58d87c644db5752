"""Would compiling ``protocol/`` with mypyc pay? Measured, before anything is shipped.

    python -m benchmarks.compiled [--rounds 4] [--windows 6] [--seconds 3]

1. Which modules of ``rocketmq_actors/protocol`` mypyc compiles, and which of those still
   import (each alone, in a scratch copy of the package).
2. The codec (``benchmarks/codec.py``) with the modules that compile and import, against the
   pure-Python package, in alternating fresh processes (``--rounds`` each).
3. Our pipelined path (b) against the null broker with the same modules, against the pure
   package, in alternating fresh windows (``benchmarks/abtest.py``'s worker).

The scratch copy is removed at exit; results go to ``benchmarks/results/compiled.json`` and
docs/performance.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .abtest import TREE, pooled, warm_up, window
from .common import RESULTS, alternating, last_json, write_results
from .nullbroker import NullBroker

PROTOCOL = TREE / "rocketmq_actors" / "protocol"
CODEC_FIGURES = ("encode_send_v2_us", "decode_response_frame_us", "decode_128b_msgs_per_s")


def _copy(scratch: Path) -> Path:
    """A copy of this tree's package (no caches, no compiled modules) under ``scratch``."""
    target = scratch / "tree"
    shutil.copytree(TREE / "rocketmq_actors", target / "rocketmq_actors",
                    ignore=shutil.ignore_patterns("__pycache__", "*.so"))  # fmt: skip
    # mypyc's type check, with the project's allowance for the extras without stubs
    (target / "mypy.ini").write_text(
        "[mypy]\n[mypy-lz4.*,pyarrow.*,pyspark.*]\nignore_missing_imports = True\n"
    )
    return target


def _compile(tree: Path, modules: list[str]) -> subprocess.CompletedProcess[str]:
    """mypyc over ``modules`` (paths relative to ``tree``), the extension modules placed
    beside their sources (which Python then imports first)."""
    mypyc = Path(sys.executable).with_name("mypyc")
    return subprocess.run(
        [str(mypyc), *modules], cwd=tree, capture_output=True, text=True, check=False,
        timeout=900,
    )  # fmt: skip


def _error(done: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in (done.stdout + done.stderr).splitlines() if "error" in line]
    return (lines[0] if lines else (done.stdout + done.stderr)[-300:]).strip()


def feasibility(scratch: Path) -> dict[str, str]:
    """Each protocol module alone: "ok", or why mypyc refused it or it failed to import."""
    verdicts: dict[str, str] = {}
    for source in sorted(PROTOCOL.glob("*.py")):
        if source.name == "__init__.py":
            continue
        try:
            verdicts[source.stem] = _verdict(_copy(scratch / source.stem), source.name)
        finally:
            shutil.rmtree(scratch / source.stem, ignore_errors=True)
    return verdicts


def _verdict(tree: Path, filename: str) -> str:
    done = _compile(tree, [f"rocketmq_actors/protocol/{filename}"])
    if done.returncode != 0:
        return f"mypyc refuses it: {_error(done)}"
    module = f"rocketmq_actors.protocol.{filename.removesuffix('.py')}"
    imported = subprocess.run(
        [sys.executable, "-c", f"import {module} as m; assert m.__file__.endswith('.so')"],
        cwd=tree, capture_output=True, text=True, check=False,
    )  # fmt: skip
    last = (imported.stderr.strip().splitlines() or ["?"])[-1]
    return "ok" if imported.returncode == 0 else f"import fails: {last}"


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


def pipelined_pairs(compiled: Path, windows: int, seconds: float) -> dict[str, Any]:
    sides: dict[str, list[dict[str, Any]]] = {"pure": [], "compiled": []}
    with NullBroker() as broker:
        warm_up(broker.addr, seconds, 256)
        for side in alternating(windows, "pure", "compiled"):
            got = window(compiled if side == "compiled" else None, broker.addr, seconds, 256)
            if got.pop("framing_compiled") != (side == "compiled"):  # (PYTHONPATH shadowing)
                raise SystemExit(f"the {side} window ran the package of {got.pop('package')}")
            got.pop("package")
            sides[side].append(got)
    return {side: pooled(each, seconds) for side, each in sides.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=4, help="codec runs per side")
    parser.add_argument("--windows", type=int, default=6, help="pipelined windows per side")
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--out", type=Path, default=RESULTS / "compiled.json")
    args = parser.parse_args(argv)
    began = time.monotonic()
    scratch = Path(tempfile.mkdtemp(prefix="rocketmq-actors-mypyc-"))
    try:
        verdicts = feasibility(scratch)
        compiled = _copy(scratch / "compiled")
        chosen = [f"rocketmq_actors/protocol/{m}.py" for m, v in verdicts.items() if v == "ok"]
        done = _compile(compiled, chosen)
        if done.returncode != 0:
            raise SystemExit(f"mypyc failed on {chosen}: {_error(done)}")
        pure = _copy(scratch / "pure")
        codec = codec_pairs(pure, compiled, args.rounds)
        pipelined = pipelined_pairs(compiled, args.windows, args.seconds)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    write_results(
        args.out,
        {
            "settings": {"rounds": args.rounds, "windows": args.windows,
                         "window_seconds": args.seconds,
                         "took_seconds": round(time.monotonic() - began)},
            "modules": verdicts,
            "codec": codec,
            "b_pipelined_1k": pipelined,
        },
    )  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
