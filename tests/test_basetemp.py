"""make test's sessions run side by side: one's tmp_path must survive another's start."""

from __future__ import annotations

import secrets
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_another_versions_session_leaves_this_sessions_tmp_path_alone(
    tmp_path: Path,
) -> None:
    mine = tmp_path / "kept"
    mine.write_text("still here")
    other = f"probe-{secrets.token_hex(4)}"  # a version no real session runs with
    probe = tmp_path / "test_probe.py"
    probe.write_text("def test_probe(tmp_path):\n    (tmp_path / 'x').write_text('x')\n")
    try:
        ran = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.conftest",
             "--rocketmq-version", other, "--rootdir", str(ROOT), str(probe)],
            cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert ran.returncode == 0, ran.stdout + ran.stderr
        assert "1 passed" in ran.stdout
        # the probe asked for a tmp_path (its session emptied its base directory) ...
        assert (ROOT / ".state" / "pytest" / other / "test_probe0" / "x").exists()
        # ... which is not this session's (under .state/pytest/<its version>, or the
        # --basetemp its make target gives it)
        assert mine.read_text() == "still here"
        assert tmp_path.is_relative_to(ROOT / ".state" / "pytest")
        assert not tmp_path.is_relative_to(ROOT / ".state" / "pytest" / other)
    finally:
        shutil.rmtree(ROOT / ".state" / "pytest" / other, ignore_errors=True)
