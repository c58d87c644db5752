"""Shared test configuration."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import hypothesis  # imported here, at collection, on purpose (see below)
import pytest
import structlog

# hypothesis's pytest plugin imports hypothesis lazily in its terminal-summary hook when no
# test module did; under pytest's assertion rewriting that import, made that deep in the hook
# stack, trips a CPython 3.11.7 compiler bug ("SystemError: AST constructor recursion depth
# mismatch") and a run of, say, tests/producer/test_failures.py alone exited 1 after passing.


# No deadlines: a property test is about values, not speed (timings belong in benchmarks/),
# and on a loaded 2-core CI machine an example overran hypothesis's default deadline
hypothesis.settings.register_profile("rocketmq-actors", deadline=None)
hypothesis.settings.load_profile("rocketmq-actors")


def pytest_configure(config: pytest.Config) -> None:
    """Temporary directories of tests live under .state/ in the checkout (emptied at the
    start of each run), not in /tmp, unless --basetemp says otherwise."""
    if config.option.basetemp is None:
        state = Path(__file__).resolve().parent.parent / ".state"
        state.mkdir(exist_ok=True)
        config.option.basetemp = str(state / "pytest")


@pytest.fixture(autouse=True)
def _restore_structlog() -> Iterator[None]:
    """A test that configures logging (the CLI does) must not leak it into later tests."""
    yield
    structlog.reset_defaults()
