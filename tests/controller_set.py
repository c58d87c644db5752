"""A 5.x controller-mode set for a test (shared by the controller tests)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rocketmq_actors.testing.cluster import ClusterSpec, LocalCluster


def controller_set(request: pytest.FixtureRequest, why: str) -> Iterator[LocalCluster]:
    """Start one on the session's broker version (a 4.x version skips: ``why``, what came with
    controller mode in 5.0), yield it, stop it."""
    version = request.config.getoption("--rocketmq-version")
    if version.startswith("4."):
        pytest.skip(f"{why} came with RocketMQ 5.0; {version}")
    cluster = LocalCluster(ClusterSpec(version=version, controller=True))
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop(graceful=False)
