"""docs/performance.md's section on mypyc, from ``benchmarks/results/compiled.json``
(``benchmarks.compiled``)."""

from __future__ import annotations

import statistics
from typing import Any

__all__ = ["COMPILED_THRESHOLD", "compiled_section"]

COMPILED_METHOD = """\
`python -m benchmarks.compiled` asks whether compiling the client's pure, typed code with mypyc
(optional compiled wheels with a pure-Python fallback, as aiohttp and yarl ship theirs) would
pay. It compiles every module of `protocol/` and the modules beyond it that a send and its
answer go through in one build in a scratch copy, leaving out each module mypyc refuses or that
then fails to import, and measures against the pure package, in alternating fresh processes:
the codec (`benchmarks/codec.py`) with the compiled `protocol/`, and our pipelined paths
against the null broker with three scopes: `protocol/` alone (it imports nothing above it, so
its modules of the build run alone), the modules of the build that define no coroutine
(`sync`), and the whole build (`send_path`). Then it runs the unit tests of the packages it
compiles (`tests/protocol`, `tests/producer`, `tests/runtime`, `tests/cluster`, no broker, not
the tests marked `interpreted`, which replace or inspect a function, method or class that mypyc
compiles) against each scope. `producer/prepare` is not a candidate: it validates the user's
`Message`, and compiled, reading a field of the wrong type raises `TypeError` before its check
can raise `InvalidMessage`. The rule set before measuring: compiled wheels are worth their
build matrix (a wheel per platform and Python, `make test` both ways) only if they save at
least a tenth of the client's CPU per message on (b), `await send`, and no unit test fails
compiled.

What made tests fail compiled, and what was done: a compiled function checks the declared type
of each value it reads from an interpreted object, where the pure code checks it later and
raises a typed error (so `producer/prepare`, which validates the user's `Message`, is no
candidate); a test that replaces a function or method (`monkeypatch.setattr`) reaches neither
compiled callers, which call it directly, nor a compiled instance, whose attributes are
read-only (such tests are marked `interpreted`); and mypyc builds `raise ... from ...` without
its `from` (`mypyc/irbuild/statement.py`), so the modules it may compile chain with
`caused(error, cause)` (`protocol/errors.py`), which `tests/protocol/test_errors.py` holds them
to.
"""

SHIPPED = """\
What ships: the `send_path` scope, as an optional compiled wheel beside the pure one.
`hatch_build.py`, the wheel's build hook, compiles the modules that pyproject.toml lists under
`mypyc-modules` (this scope's, which `tests/test_hatch_build.py` holds to `compiled.json`) when
`ROCKETMQ_ACTORS_MYPYC=1` is set, and tags the wheel for the Python and platform it was built
on; the compiled modules' sources stay in it. Without the variable the wheel is pure Python.
`make test` runs both: the whole suite on the pure package, then `make compiled` builds the
compiled wheel, installs it into a directory of its own and runs the unit and integration tests
of `tests/protocol`, `tests/producer`, `tests/runtime` and `tests/cluster` against it (not those
marked `interpreted`), on a 5.3.3 cluster of its own. No wheel is published yet: a user builds
the compiled one from source (README, Install). Both builds against Java: the null-broker
sections above.
"""

COMPILED_THRESHOLD = 0.10
COMPILED_RULE_PATH = "b_pipelined_1k"


def _figure(value: float) -> str:
    """A codec figure: whole numbers from a thousand up, else three decimals at most."""
    return str(round(value)) if value >= 1000 else f"{round(value, 3):g}"


def _saved(path: dict[str, Any]) -> float:
    """The share of the client's CPU per message compiling saved on one path."""
    built: float = path["compiled"]["client_cpu_us_per_msg"]
    pure: float = path["pure"]["client_cpu_us_per_msg"]
    return 1 - built / pure


def compiled_section(compiled: dict[str, Any]) -> list[str]:
    modules = compiled["modules"]
    ok = [name for name, verdict in modules.items() if verdict == "ok"]
    codec = compiled["codec"]
    lines = [
        "## mypyc over the send path (`compiled.json`)\n",
        COMPILED_METHOD,
        "Settings: " + ", ".join(f"{k} {v}" for k, v in compiled["settings"].items()) + ".\n",
        f"Modules compiled in one build that import: {len(ok)} of {len(modules)}"
        f" ({', '.join(f'`{m}`' for m in ok) or 'none'}). The others:\n",
        "| module | why not |",
        "|---|---|",
        *[f"| `{m}` | {v.replace('|', '/')} |" for m, v in modules.items() if v != "ok"],
        "",
        "| codec figure (median of the runs) | pure | compiled `protocol/` |",
        "|---|---:|---:|",
        *[
            f"| `{key}` | {_figure(statistics.median(r[key] for r in codec['pure']))} | "
            f"{_figure(statistics.median(r[key] for r in codec['compiled']))} |"
            for key in codec["pure"][0]
        ],
        "",
        "| scope | path | msgs/s pure / compiled (pooled) | client CPU us/msg pure / compiled"
        " | CPU saved |",
        "|---|---|---|---|---:|",
    ]
    verdicts = []
    for scope, measured in compiled["scopes"].items():
        for path, sides in measured.items():
            if path in ("modules", "tests"):
                continue
            pure, built = sides["pure"], sides["compiled"]
            lines.append(
                f"| {scope} | {path} | {pure['msgs_per_s']} / {built['msgs_per_s']} | "
                f"{pure['client_cpu_us_per_msg']} / {built['client_cpu_us_per_msg']} | "
                f"{_saved(sides):.1%} |"
            )
        verdicts.append(_verdict(scope, measured))
    return [
        *lines,
        "",
        "| scope | modules compiled | unit tests passed / failed (deselected) | failures per test"
        " file |",
        "|---|---:|---|---|",
        *[_parity_row(scope, measured) for scope, measured in compiled["scopes"].items()],
        "",
        f"The rule (at least {COMPILED_THRESHOLD:.0%} of the client's CPU per message on (b),"
        f" and no test failing compiled): {'; '.join(verdicts)}.\n",
        SHIPPED,
    ]


def _parity_row(scope: str, measured: dict[str, Any]) -> str:
    tests = measured["tests"]
    if "error" in tests:
        return f"| {scope} | {len(measured['modules'])} | did not run | - |"
    files = [f"`{f.removeprefix('tests/')}` {n}" for f, n in tests["failed_by_file"].items()]
    return (
        f"| {scope} | {len(measured['modules'])} | {tests['passed']} / {tests['failed']} "
        f"({tests['deselected']}) | {', '.join(files) or 'none'} |"
    )


def _verdict(scope: str, measured: dict[str, Any]) -> str:
    saved = _saved(measured[COMPILED_RULE_PATH])
    if "error" in measured["tests"]:
        return f"{scope} saved {saved:.1%} on (b), its tests did not run: not met, not shipped"
    failed = measured["tests"]["failed"]
    if saved >= COMPILED_THRESHOLD and not failed:
        return f"{scope} saved {saved:.1%} on (b) and passes the tests: met, worth shipping"
    fail = f"{failed} test fails" if failed == 1 else f"{failed} tests fail"
    misses = [f"saved {saved:.1%} on (b)"] + ([fail] if failed else [])
    return f"{scope} {', '.join(misses)}: not met, not shipped"
