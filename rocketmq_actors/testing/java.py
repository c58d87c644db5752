"""The Java client as a peer: run a Java program on the cached RocketMQ jars, which include
``rocketmq-client``. Used by the tests (a Java producer, consumer or group member beside ours)
and by the benchmarks.

A program is one ``.java`` source without a package. It is compiled once per (source, RocketMQ
version) into the jar cache (``<cache>/java-classes/``) and run from its classes: compiling
costs a JVM about ten times what starting the compiled program does. Where the JDK has no
``javac`` it runs in source-file mode instead (``java Program.java``).

Everything the JVM and the Java client write (``~/logs/rocketmqlogs``, temporary files) goes to
a scratch directory removed when the program ends.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .jars import DEFAULT_VERSION, LauncherError, cache_root, find_java, resolve_server_jars

__all__ = ["JavaProgramFailed", "java_argv", "java_scratch", "run_java"]


class JavaProgramFailed(LauncherError):
    """A Java program exited with a status other than 0."""


@contextmanager
def java_scratch() -> Iterator[Path]:
    """A directory for one Java program's home and temporary files, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="rocketmq-actors-java-") as scratch:
        yield Path(scratch)


def _javac(java: str) -> str | None:
    """The ``javac`` beside ``java`` (a JDK), else one on PATH, else None (a JRE)."""
    beside = Path(java).resolve().parent / "javac"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("javac")


def compiled_classes(source: Path, lib: Path, version: str, java: str) -> Path | None:
    """The directory holding ``source``'s classes compiled against ``lib``, compiled on first
    use (into a temporary directory renamed into place, so concurrent sessions neither see a
    half-written one nor fail when another got there first); None without a ``javac``."""
    javac = _javac(java)
    if javac is None:
        return None
    digest = hashlib.sha256(source.read_bytes() + version.encode()).hexdigest()[:16]
    target = cache_root() / "java-classes" / f"{source.stem}-{digest}"
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=f".{source.stem}-") as scratch:
        built = Path(scratch) / "classes"
        done = subprocess.run(
            # (-J-XX:-UsePerfData: its JVM leaves no /tmp/hsperfdata_<user>, as the others)
            [javac, "-J-XX:-UsePerfData", "-nowarn", "-proc:none", "-d", str(built),
             "-cp", f"{lib}/*", str(source)],
            capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        if done.returncode != 0:
            raise JavaProgramFailed(f"javac {source.name} exited {done.returncode}: "
                                    f"{done.stderr[-2000:]}")  # fmt: skip
        try:
            built.rename(target)
        except OSError:
            if not target.is_dir():  # (another session renamed its copy into place first)
                raise
    return target


def java_argv(
    source: Path, *args: object, scratch: Path, heap_mb: int = 256, version: str = DEFAULT_VERSION
) -> list[str]:
    lib = resolve_server_jars(version)
    java = find_java()
    classes = compiled_classes(source, lib, version, java)
    program = [str(source)] if classes is None else [source.stem]
    classpath = f"{lib}/*" if classes is None else f"{lib}/*{os.pathsep}{classes}"
    return [
        java, f"-Xmx{heap_mb}m", "-XX:-UsePerfData", f"-Duser.home={scratch}",
        f"-Djava.io.tmpdir={scratch}", "-cp", classpath, *program, *map(str, args),
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
