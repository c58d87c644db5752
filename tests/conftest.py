"""Shared test configuration."""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Iterator
from pathlib import Path

import anyio
import hypothesis  # imported here, at collection, on purpose (see below)
import pytest
import structlog

from tests import slack

pytest_plugins = ["tests.timing"]  # (opt-in: ROCKETMQ_ACTORS_TIMING)

# hypothesis's pytest plugin imports hypothesis lazily in its terminal-summary hook when no
# test module did; under pytest's assertion rewriting that import, made that deep in the hook
# stack, trips a CPython 3.11.7 compiler bug ("SystemError: AST constructor recursion depth
# mismatch") and a run of, say, tests/producer/test_failures.py alone exited 1 after passing.


# No deadlines: a property test is about values, not speed (timings belong in benchmarks/),
# and on a loaded 2-core CI machine an example overran hypothesis's default deadline
hypothesis.settings.register_profile("rocketmq-actors", deadline=None)
hypothesis.settings.load_profile("rocketmq-actors")


def pytest_configure(config: pytest.Config) -> None:
    """Temporary directories of tests live under .state/pytest/<broker version>/ in the
    checkout (emptied at the start of each run), not in /tmp, unless --basetemp says otherwise.

    One directory per version: make test runs three sessions side by side (5.3.3, 5.5.0,
    4.9.7), and pytest empties its base directory when a session first asks for a tmp_path.
    With one directory for all three, a session starting its first tmp_path test deleted the
    directories of the others' running tests: a CI run failed with a CLI-started broker whose
    config and log had vanished under it.

    The scheduling-delay probe starts here, so every timing bound has samples (tests/slack.py)."""
    slack.start()
    if config.option.basetemp is None:
        version = config.getoption("--rocketmq-version")
        root = Path(__file__).resolve().parent.parent / ".state" / "pytest"
        root.mkdir(parents=True, exist_ok=True)
        config.option.basetemp = str(root / version)


@pytest.fixture(autouse=True)
def _restore_structlog() -> Iterator[None]:
    """A test that configures logging (the CLI does) must not leak it into later tests."""
    yield
    structlog.reset_defaults()


#: ``ROCKETMQ_ACTORS_BACKEND=trio`` (make test's trio stage, run with ``-p no:asyncio``): each
#: async test runs under ``anyio.run`` on that backend instead of pytest-asyncio's loop (its
#: fixtures are the plain ones: a session cluster's address, unique names)
BACKEND = os.environ.get("ROCKETMQ_ACTORS_BACKEND", "asyncio")


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    function = pyfuncitem.obj
    if BACKEND == "asyncio" or not inspect.iscoroutinefunction(function):
        return None
    arguments = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
    anyio.run(functools.partial(function, **arguments), backend=BACKEND)
    return True
