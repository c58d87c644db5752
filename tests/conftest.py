"""Shared test configuration."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import structlog


@pytest.fixture(autouse=True)
def _restore_structlog() -> Iterator[None]:
    """A test that configures logging (the CLI does) must not leak it into later tests."""
    yield
    structlog.reset_defaults()
