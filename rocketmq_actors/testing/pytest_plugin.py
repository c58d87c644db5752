"""pytest fixtures for testing against a real RocketMQ cluster (auto-loaded as a pytest11 plugin).

* ``rocketmq_cluster`` (session): one NameServer + one broker, started on first use, stopped at
  the end of the session; ``--rocketmq-version`` (or ``$ROCKETMQ_ACTORS_VERSION``) picks the
  server version.
* ``rocketmq_namesrv`` (session): its NameServer address; with ``$ROCKETMQ_ACTORS_TEST_NAMESRV``
  set, that cluster's instead (one you already run: no cluster is started for it).
* ``rocketmq_two_masters``: a cluster of two masters (``broker-a``, ``broker-b``) shared by the
  tests of the session that ask for it, started on first use; a test may kill, stop or pause
  its brokers: each is running again when the test ends (:meth:`LocalCluster.heal`). The
  tests that ask for it run last, in their collected order, so its JVMs live only while they
  run.
* ``rocketmq_cluster_factory``: start other topologies (two masters, master + slave) for one
  test; they are stopped when the test ends.
* ``unique_topic`` / ``unique_group``: names no other test uses, derived from the test name.
"""

from __future__ import annotations

import os
import re
import secrets
from collections.abc import Callable, Iterator

import pytest

from .cluster import ClusterSpec, LocalCluster
from .jars import DEFAULT_VERSION

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rocketmq-actors")
    group.addoption(
        "--rocketmq-version",
        default=os.environ.get("ROCKETMQ_ACTORS_VERSION", DEFAULT_VERSION),
        help="RocketMQ server version for the session cluster (default %(default)s)",
    )


@pytest.fixture(scope="session")
def rocketmq_cluster(request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    version = request.config.getoption("--rocketmq-version")
    cluster = LocalCluster(ClusterSpec(version=version))
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop(graceful=False)  # its store is deleted: no need to wait for a clean stop


#: a running cluster's NameServer for ``rocketmq_namesrv`` (tests that need the cluster object,
#: ``rocketmq_cluster``, still get one of their own)
TEST_NAMESRV_ENV = "ROCKETMQ_ACTORS_TEST_NAMESRV"


@pytest.fixture(scope="session")
def rocketmq_namesrv(request: pytest.FixtureRequest) -> str:
    given = os.environ.get(TEST_NAMESRV_ENV)
    if given:
        return given
    cluster: LocalCluster = request.getfixturevalue("rocketmq_cluster")
    return cluster.namesrv_addr


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests of the shared two-master cluster last (a stable sort: each part keeps its
    order): the cluster starts for the first of them and stops with the session."""
    items.sort(key=lambda item: "rocketmq_two_masters" in getattr(item, "fixturenames", ()))


@pytest.fixture(scope="session")
def _rocketmq_two_masters_session(request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    version = request.config.getoption("--rocketmq-version")
    cluster = LocalCluster(ClusterSpec(version=version, brokers=2))
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop(graceful=False)


@pytest.fixture
def rocketmq_two_masters(_rocketmq_two_masters_session: LocalCluster) -> Iterator[LocalCluster]:
    yield _rocketmq_two_masters_session
    _rocketmq_two_masters_session.heal()


@pytest.fixture
def rocketmq_cluster_factory(
    request: pytest.FixtureRequest,
) -> Iterator[Callable[..., LocalCluster]]:
    started: list[LocalCluster] = []
    version = request.config.getoption("--rocketmq-version")

    def start(**spec: object) -> LocalCluster:
        spec.setdefault("version", version)
        cluster = LocalCluster(ClusterSpec(**spec))  # type: ignore[arg-type]
        started.append(cluster)
        cluster.start()
        return cluster

    yield start
    for cluster in reversed(started):
        cluster.stop(graceful=False)


def unique_name(request: pytest.FixtureRequest, prefix: str) -> str:
    """``<prefix>_<test name>_<random>``, within RocketMQ's charset and length limits."""
    base = _UNSAFE.sub("_", request.node.name).strip("_")[:80]
    return f"{prefix}_{base}_{secrets.token_hex(4)}"


@pytest.fixture
def unique_topic(request: pytest.FixtureRequest) -> str:
    return unique_name(request, "T")


@pytest.fixture
def unique_group(request: pytest.FixtureRequest) -> str:
    return unique_name(request, "G")
