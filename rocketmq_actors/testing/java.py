"""The Java client as a peer: run a Java program (source-file mode, no build step) on the cached
RocketMQ jars, which include ``rocketmq-client``. Used by the tests (a Java producer, consumer or
group member beside ours) and by the benchmarks.

Everything the JVM and the Java client write (``~/logs/rocketmqlogs``, temporary files) goes to
a scratch directory removed when the program ends.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .jars import DEFAULT_VERSION, LauncherError, find_java, resolve_server_jars

__all__ = ["JavaProgramFailed", "java_argv", "java_scratch", "run_java"]


class JavaProgramFailed(LauncherError):
    """A Java program exited with a status other than 0."""


@contextmanager
def java_scratch() -> Iterator[Path]:
    """A directory for one Java program's home and temporary files, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="rocketmq-actors-java-") as scratch:
        yield Path(scratch)


def java_argv(
    source: Path, *args: object, scratch: Path, heap_mb: int = 256, version: str = DEFAULT_VERSION
) -> list[str]:
    lib = resolve_server_jars(version)
    return [
        find_java(), f"-Xmx{heap_mb}m", "-XX:-UsePerfData", f"-Duser.home={scratch}",
        f"-Djava.io.tmpdir={scratch}", "-cp", f"{lib}/*", str(source), *map(str, args),
    ]  # fmt: skip


def run_java(
    source: Path,
    *args: object,
    heap_mb: int = 512,
    timeout: float = 900,
    version: str = DEFAULT_VERSION,
) -> list[dict[str, Any]]:
    """Run ``source`` to its end on the ``version`` jars; return the JSON lines it printed on
    stdout."""
    with java_scratch() as scratch:
        done = subprocess.run(
            java_argv(source, *args, scratch=scratch, heap_mb=heap_mb, version=version),
            capture_output=True, text=True, timeout=timeout, check=False, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    if done.returncode != 0:
        raise JavaProgramFailed(f"{source.name} exited {done.returncode}: {done.stderr[-2000:]}")
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
