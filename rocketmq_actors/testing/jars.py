"""Resolve Apache RocketMQ server jars from Maven Central into a per-user cache.

The first call for a version runs ``mvn dependency:copy-dependencies`` on the pom shipped in
``rocketmq_actors/testing/maven/pom.xml``, with a Maven repository of its own that is deleted
afterwards (``~/.m2`` is never touched); later calls find the finished directory and touch
neither Maven nor the network. Concurrent callers serialize on a lock file.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import tempfile
import time
from importlib import resources
from pathlib import Path

from rocketmq_actors.logs import get_logger

__all__ = [
    "DEFAULT_VERSION",
    "DownloadFailed",
    "LauncherError",
    "ToolMissing",
    "UnpublishedVersion",
    "cache_root",
    "find_java",
    "resolve_proxy_jars",
    "resolve_server_jars",
]

DEFAULT_VERSION = "5.3.3"
NEWEST_VERSION = "5.5.0"  # newest release whose namesrv, broker, tools and client jars all resolve
COMPAT_VERSION = "4.9.7"  # newest 4.9.x whose namesrv/broker jars are on Maven Central
#: the versions ``make test`` runs the integration suite on
TESTED_VERSIONS = (NEWEST_VERSION, DEFAULT_VERSION, COMPAT_VERSION)

#: the server artifacts the launcher needs (rocketmq_actors/testing/maven/pom.xml)
SERVER_ARTIFACTS = ("rocketmq-namesrv", "rocketmq-broker", "rocketmq-tools", "rocketmq-client")
#: releases that cannot run from Maven Central, refused before Maven is asked: what is
#: published of them, and the release to use instead
UNPUBLISHED_SERVER_VERSIONS = {
    "4.9.8": ("only its client jar is published", COMPAT_VERSION),
    "4.9.6": ("its namesrv and broker jars are not published", COMPAT_VERSION),
    "5.5.1": (
        "its rocketmq-broker jar is published, but rocketmq-namesrv, rocketmq-tools and "
        "rocketmq-client are not",
        NEWEST_VERSION,
    ),
}

_COMPLETE = ".complete"
log = get_logger("rocketmq_actors.testing")


class LauncherError(Exception):
    """The local cluster could not be prepared or started; the message says why and what to do."""


class ToolMissing(LauncherError):
    """``java`` or ``mvn`` is not installed."""


class DownloadFailed(LauncherError):
    """Maven could not resolve the server jars."""


class UnpublishedVersion(LauncherError):
    """The release's server jars are not (all) on Maven Central; the message names what is
    missing and the release to use instead."""


def check_published(version: str) -> None:
    """Refuse, before Maven runs, a release known to lack server jars on Maven Central."""
    if version in UNPUBLISHED_SERVER_VERSIONS:
        what, instead = UNPUBLISHED_SERVER_VERSIONS[version]
        raise UnpublishedVersion(
            f"RocketMQ {version} cannot run from Maven Central: {what} there; use {instead}"
        )


def missing_artifacts(maven_log: str) -> list[str]:
    """The RocketMQ artifacts Maven reported it could not resolve (its "The following
    artifacts could not be resolved: g:a:jar:v, ..." line), in its order."""
    found = re.search(r"could not be resolved: (.*?): Could not", maven_log)
    if not found:
        return []
    names = (entry.strip().split(":") for entry in found.group(1).split(","))
    return [parts[1] for parts in names if len(parts) >= 2 and parts[0] == "org.apache.rocketmq"]


def _download_failure(
    version: str, returncode: int, log_path: Path, artifacts: tuple[str, ...] = SERVER_ARTIFACTS
) -> DownloadFailed:
    text = log_path.read_text(errors="replace")
    missing = missing_artifacts(text)
    if missing:
        present = [a for a in artifacts if a not in missing]
        return DownloadFailed(
            f"RocketMQ {version} is not (all) on Maven Central: {', '.join(missing)} could not "
            f"be resolved (resolved: {', '.join(present) or 'none'}). Use {NEWEST_VERSION}, "
            f"{DEFAULT_VERSION} or {COMPAT_VERSION}; Maven's log: {log_path}"
        )
    return DownloadFailed(
        f"Maven could not download RocketMQ {version} (exit {returncode}); "
        f"see {log_path}:\n{text[-3000:]}"
    )


def cache_root() -> Path:
    """``$ROCKETMQ_ACTORS_CACHE_DIR``, else ``$XDG_CACHE_HOME/rocketmq-actors``, else
    ``~/.cache/rocketmq-actors``."""
    explicit = os.environ.get("ROCKETMQ_ACTORS_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "rocketmq-actors"


def find_java() -> str:
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        candidate = Path(java_home) / "bin" / "java"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which("java")
    if not found:
        raise ToolMissing(
            "`java` was not found on PATH (and JAVA_HOME is unset): install a JDK 17, "
            "for example `apt-get install openjdk-17-jdk-headless`"
        )
    return found


def _dir_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.iterdir() if p.is_file())


def _maven_env() -> dict[str, str]:
    """The environment for ``mvn``: its JVM without perf data (it would leave
    ``/tmp/hsperfdata_<user>`` behind)."""
    opts = os.environ.get("MAVEN_OPTS", "")
    return {**os.environ, "MAVEN_OPTS": f"{opts} -XX:-UsePerfData".strip()}


def resolve_server_jars(version: str = DEFAULT_VERSION, cache_dir: Path | None = None) -> Path:
    """Return a directory holding every runtime jar of the RocketMQ ``version`` servers."""
    check_published(version)
    return _resolve(version, "pom.xml", "lib", cache_dir, log_name="maven.log",
                    artifacts=SERVER_ARTIFACTS)  # fmt: skip


def resolve_proxy_jars(version: str = DEFAULT_VERSION, cache_dir: Path | None = None) -> Path:
    """Return a directory holding every runtime jar of the RocketMQ ``version`` Proxy (the
    gRPC front of 5.x brokers; there is none before 5.0)."""
    check_published(version)
    major = version.partition(".")[0]
    if not major.isdigit() or int(major) < 5:
        raise UnpublishedVersion(f"RocketMQ {version!r} has no Proxy (it came with 5.0)")
    return _resolve(version, "proxy-pom.xml", "proxy-lib", cache_dir,
                    log_name="maven-proxy.log", artifacts=("rocketmq-proxy",))  # fmt: skip


def _resolve(
    version: str,
    pom_name: str,
    subdir: str,
    cache_dir: Path | None,
    *,
    log_name: str,
    artifacts: tuple[str, ...],
) -> Path:
    """The jars of ``rocketmq_actors/testing/maven/<pom_name>`` for ``version``, resolved once
    into ``<cache>/rocketmq-<version>/<subdir>``."""
    root = cache_dir or cache_root()
    target = root / f"rocketmq-{version}" / subdir
    if (target / _COMPLETE).is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / _COMPLETE).is_file():  # another process finished while we waited
            return target
        mvn = shutil.which("mvn")
        if not mvn:
            raise ToolMissing(
                f"`mvn` was not found on PATH and RocketMQ {version} is not cached in {target}: "
                "install Maven 3.6+, for example `apt-get install maven`"
            )
        staging = Path(tempfile.mkdtemp(prefix="lib-", dir=target.parent))
        # Maven's own repository is private to this download and removed after it: the user's
        # ~/.m2 is never written, and only the copied jars stay in the cache
        repository = Path(tempfile.mkdtemp(prefix="m2-", dir=target.parent))
        log_path = target.parent / log_name
        started = time.monotonic()
        log.info("cluster.jars.resolving", version=version, target=str(target))
        pom = resources.files("rocketmq_actors.testing").joinpath(f"maven/{pom_name}")
        with resources.as_file(pom) as pom_path, open(log_path, "wb") as out:
            proc = subprocess.run(
                [
                    mvn,
                    "-B",
                    "-q",
                    "-f",
                    str(pom_path),
                    "dependency:copy-dependencies",
                    "-DincludeScope=runtime",
                    f"-Drocketmq.version={version}",
                    f"-DoutputDirectory={staging}",
                    f"-Dmaven.repo.local={repository}",
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                check=False,
                env=_maven_env(),
            )
        shutil.rmtree(repository, ignore_errors=True)
        jars = list(staging.glob("*.jar"))
        if proc.returncode != 0 or not jars:
            shutil.rmtree(staging, ignore_errors=True)
            raise _download_failure(version, proc.returncode, log_path, artifacts)
        size = _dir_size(staging)
        (staging / _COMPLETE).write_text(f"{len(jars)} jars, {size} bytes\n")
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
        log.info(
            "cluster.jars.resolved",
            version=version,
            jars=len(jars),
            bytes=size,
            seconds=round(time.monotonic() - started, 1),
        )
        return target
