"""The Java peer runner compiles a program once per source and version, then runs its classes."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketmq_actors.testing import java as java_peer
from rocketmq_actors.testing.jars import resolve_server_jars

# (the RocketMQ jars, downloaded once into the cache; what it checks is the same whatever the
# broker version a session runs: once)
pytestmark = [pytest.mark.integration, pytest.mark.once]

PROGRAM = """
public class Hello {
    public static void main(String[] args) {
        System.out.println("{\\"hello\\": \\"" + args[0] + "\\", \\"n\\": %d}");
    }
}
"""


def test_a_program_is_compiled_once_and_again_when_its_source_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROCKETMQ_ACTORS_CACHE_DIR", str(tmp_path / "cache"))
    real_cache = resolve_server_jars()  # (resolved from the user's cache: no download)
    monkeypatch.setattr(java_peer, "resolve_server_jars", lambda version="": real_cache)
    source = tmp_path / "Hello.java"
    source.write_text(PROGRAM % 1)
    assert java_peer.run_java(source, "world", heap_mb=64) == [{"hello": "world", "n": 1}]
    (first,) = (tmp_path / "cache" / "java-classes").iterdir()
    assert (first / "Hello.class").is_file()
    stamp = (first / "Hello.class").stat().st_mtime_ns
    assert java_peer.run_java(source, "again", heap_mb=64) == [{"hello": "again", "n": 1}]
    assert (first / "Hello.class").stat().st_mtime_ns == stamp  # not compiled again
    source.write_text(PROGRAM % 2)
    assert java_peer.run_java(source, "changed", heap_mb=64) == [{"hello": "changed", "n": 2}]
    assert len(list((tmp_path / "cache" / "java-classes").iterdir())) == 2


def test_without_javac_it_runs_the_source_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(java_peer, "_javac", lambda java: None)
    source = tmp_path / "Hello.java"
    source.write_text(PROGRAM % 3)
    argv = java_peer.java_argv(source, "x", scratch=tmp_path)
    assert str(source) in argv and "Hello" not in argv
    assert java_peer.run_java(source, "source mode", heap_mb=64) == [
        {"hello": "source mode", "n": 3}
    ]


def test_a_program_that_does_not_compile_says_what_javac_said(tmp_path: Path) -> None:
    source = tmp_path / "Broken.java"
    source.write_text("public class Broken { void f() { undefined(); } }\n")
    with pytest.raises(java_peer.JavaProgramFailed, match="undefined"):
        java_peer.java_argv(source, scratch=tmp_path)
