from __future__ import annotations

import pytest

from rocketmq_actors import __version__
from rocketmq_actors.cli import main


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert __version__ in capsys.readouterr().out


def test_unknown_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["frobnicate"])
    assert exc.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_stop_without_state_is_one_line_error(
    capsys: pytest.CaptureFixture[str], tmp_path: object
) -> None:
    assert main(["cluster", "stop", "--state-dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "state.json" in err and "Traceback" not in err
