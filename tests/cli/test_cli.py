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
    assert main(["cluster", "stop", "--state-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "state.json" in err and "Traceback" not in err


def test_logging_survives_a_closed_stderr(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Log lines to a closed stream are dropped, never raised into the code that logged."""
    import io

    import structlog

    from rocketmq_actors.logs import configure_logging

    configure_logging()
    closed = io.StringIO()
    closed.close()
    monkeypatch.setattr("sys.stderr", closed)
    structlog.get_logger("t").warning("connection.closed", addr="x")  # must not raise
    live = io.StringIO()
    monkeypatch.setattr("sys.stderr", live)
    structlog.get_logger("t").warning("connection.closed", addr="y")
    assert "connection.closed" in live.getvalue() and "addr=y" in live.getvalue()


def test_produce_rejects_a_bad_address_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["produce", "--namesrv", "nonsense", "--topic", "T"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nonsense" in err and "Traceback" not in err


def test_produce_rejects_bad_counts(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["produce", "--namesrv", "127.0.0.1:9876", "--topic", "T", "--count", "0"]) == 2
    assert "--count" in capsys.readouterr().err


UNREACHABLE = "127.0.0.1:1"  # nothing listens there: every connection is refused at once
COMMANDS = {
    "produce": ["produce", "--namesrv", UNREACHABLE, "--topic", "T", "--count", "1"],
    "consume": ["consume", "--namesrv", UNREACHABLE, "--topic", "T", "--group", "G"],
    "consume --handler": ["consume", "--namesrv", UNREACHABLE, "--topic", "T", "--group", "G",
                          "--follow", "--handler", "json:dumps"],
    "route": ["route", "--namesrv", UNREACHABLE, "--topic", "T"],
    "topic list": ["topic", "list", "--namesrv", UNREACHABLE],
    "topic create": ["topic", "create", "--namesrv", UNREACHABLE, "--topic", "T"],
    "group": ["group", "--namesrv", UNREACHABLE, "--group", "G", "--topic", "T"],
    "bench": ["bench", "--namesrv", UNREACHABLE, "--count", "10"],
}  # fmt: skip


@pytest.mark.parametrize("argv", COMMANDS.values(), ids=COMMANDS.keys())
def test_an_unreachable_cluster_is_one_line_and_exit_status_2(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: a 100-line ExceptionGroup traceback from ``consume``."""
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1, captured.err
    assert "NameServer" in captured.err and "Traceback" not in captured.err
    assert captured.out == ""
